-- wrk script: PUT bodies of $SIZE bytes (default 1024) to fresh keys under /files/put/.
-- Each thread's Lua state starts math.random from the same seed, so the key
-- names the thread and the run (its start time) too: without them two
-- threads, and two runs against one node, PUT the same names (half the
-- writes were overwrites).
local threads = 0
function setup(thread)
  threads = threads + 1
  thread:set("tid", threads)
end

local prefix
function init(args)
  math.randomseed(os.time() * 1000 + (tid or 0))
  prefix = "/files/put/" .. os.time() .. "-" .. tostring(tid or 0) .. "-"
end

counter = 0
local body = string.rep("x", tonumber(os.getenv("SIZE") or "1024"))
request = function()
  counter = counter + 1
  return wrk.format("PUT", prefix .. tostring(math.random(1, 1000000000)) .. "-" .. counter, nil, body)
end
