-- wrk script for scripts/bench/003.sh: GET /o/NNNNN over a catalogue of
-- N objects (env N), at random (MODE=random, the default) or in order
-- (MODE=seq, to fill the cache; one thread); MODE=hot: GET /hot only.
local n = tonumber(os.getenv("N") or "1000")
local seq, hot = os.getenv("MODE") == "seq", os.getenv("MODE") == "hot"
local i = 0
math.randomseed(os.time() + tonumber(tostring({}):sub(8), 16) % 1000)
request = function()
  if hot then return wrk.format("GET", "/hot") end
  local k
  if seq then k = i % n; i = i + 1 else k = math.random(0, n - 1) end
  return wrk.format("GET", string.format("/o/%05d", k))
end
-- A shed request (503, decision 0055) is retried after its Retry-After,
-- as a client that honours it would, not at once: a closed loop that
-- retried at once would turn the node's cheap refusals into a flood.
local wait = 0
response = function(status, headers, body)
  if status == 503 then wait = (tonumber(headers["Retry-After"]) or 1) * 1000 end
end
delay = function()
  local d = wait
  wait = 0
  return d
end
