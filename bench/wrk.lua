-- Request generator for scripts/bench.sh (wrk -s bench/wrk.lua). Read from the environment:
--   BENCH_MODE  get | list | create | update | poll, or for scripts/flood.sh: list1000 (pages
--               of 1000) | randkey (GET /v1/environments, each request with a new random key)
--   BENCH_KEY   the API key sent in x-api-key (the references ignore it)
--   BENCH_IDS   file of environment ids, one a line (get, update): each request picks one at
--               random, so the database answers from all over the table, not one hot row
--   BENCH_ENV   poll: the self_hosted environment polled (BENCH_KEY: its environment key)
-- Every wrk thread has its own Lua state: ids are loaded and the generator seeded per thread.

local mode = os.getenv("BENCH_MODE") or "get"
local ids = {}
local counter = 0
local tid = 0

local idfile = os.getenv("BENCH_IDS")
if idfile then
	for line in io.lines(idfile) do
		if #line > 0 then
			ids[#ids + 1] = line
		end
	end
end

wrk.headers["x-api-key"] = os.getenv("BENCH_KEY") or ""
wrk.headers["anthropic-version"] = "2023-06-01"
wrk.headers["anthropic-beta"] = "managed-agents-2026-04-01"
wrk.headers["content-type"] = "application/json"

local next_tid = 1
function setup(thread)
	thread:set("tid", next_tid)
	next_tid = next_tid + 1
end

function init(args)
	math.randomseed(os.time() * 1000 + tid * 7919 + math.floor(os.clock() * 1e6))
end

local function random_id()
	return ids[math.random(#ids)]
end

-- The body of every create: the same shape as the seeded rows (scripts/bench.sh).
local function create_body(n)
	return string.format(
		'{"name":"bench-%d-%d","description":"benchmark environment created by wrk",' ..
		'"metadata":{"team":"bench","tier":"gold","run":"%d"},' ..
		'"config":{"type":"cloud","networking":{"type":"unrestricted"}}}', tid, n, n)
end

function request()
	counter = counter + 1
	if mode == "get" then
		return wrk.format("GET", "/v1/environments/" .. random_id())
	elseif mode == "list" then
		return wrk.format("GET", "/v1/environments?limit=100")
	elseif mode == "create" then
		return wrk.format("POST", "/v1/environments", nil, create_body(counter))
	elseif mode == "update" then
		local body = string.format(
			'{"description":"updated by wrk thread %d request %d"}', tid, counter)
		return wrk.format("POST", "/v1/environments/" .. random_id(), nil, body)
	elseif mode == "list1000" then
		return wrk.format("GET", "/v1/environments?limit=1000")
	elseif mode == "randkey" then
		return wrk.format("GET", "/v1/environments",
			{ ["x-api-key"] = string.format("trm_%d_%d_%d", tid, counter, math.random(1e9)) })
	elseif mode == "poll" then
		return wrk.format("GET", "/v1/environments/" .. (os.getenv("BENCH_ENV") or "") ..
			"/work/poll?block_ms=999")
	end
	error("BENCH_MODE must be get, list, create, update, poll, list1000 or randkey")
end
