-- wrk script for scripts/bench/003.sh: GET /o/NNNNN over a catalogue of
-- N objects (env N), at random (MODE=random, the default) or in order
-- (MODE=seq, to fill the cache; one thread).
local n = tonumber(os.getenv("N") or "1000")
local seq = os.getenv("MODE") == "seq"
local i = 0
math.randomseed(os.time() + tonumber(tostring({}):sub(8), 16) % 1000)
request = function()
  local k
  if seq then k = i % n; i = i + 1 else k = math.random(0, n - 1) end
  return wrk.format("GET", string.format("/o/%05d", k))
end
