-- wrk script: each request creates a new tenant (one PostgreSQL transaction with an outbox row).
local threads = {}
local counter = 0
function setup(thread)
  thread:set("tid", #threads + 1)
  table.insert(threads, thread)
end
function init(args)
  math.randomseed(os.time() + tid)
  prefix = "bench-" .. tid .. "-" .. math.random(1, 1000000000)
end
local body = '{"displayName":"Bench","rpId":"example.com","origins":["https://example.com"]}'
local headers = { ["Content-Type"] = "application/json", ["Authorization"] = "Bearer " .. (os.getenv("SIGNET_ADMIN_TOKEN") or "dev-admin-token") }
request = function()
  counter = counter + 1
  return wrk.format("PUT", "/v1/admin/tenants/" .. prefix .. "-" .. counter, headers, body)
end
local statuses = {}
response = function(status, headers, body)
  statuses[status] = (statuses[status] or 0) + 1
end
