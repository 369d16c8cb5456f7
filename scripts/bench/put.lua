-- wrk script: PUT bodies of $SIZE bytes (default 1024) to fresh keys under /files/put/.
counter = 0
local body = string.rep("x", tonumber(os.getenv("SIZE") or "1024"))
request = function()
  counter = counter + 1
  return wrk.format("PUT", "/files/put/" .. tostring(math.random(1, 1000000000)) .. "-" .. counter, nil, body)
end
