-- rediss:// from Lua: verified TLS with the options of redlease.connect, and clear errors.
local redlease = require "redlease"
local helper = require "helper"

describe("TLS", function()
  local certs, server, clients

  setup(function()
    certs = os.tmpname()
    os.remove(certs)
    local rc = os.execute("../tls/make-certs " .. certs) -- true (5.2+) or 0 (5.1) on success
    assert(rc == true or rc == 0, "tests/tls/make-certs failed")
  end)
  teardown(function() os.execute("rm -rf " .. certs) end)

  before_each(function()
    server = helper.start_server(("--tls-port %%port2 --tls-cert-file %s/server.crt " ..
      "--tls-key-file %s/server.key --tls-ca-cert-file %s/ca.crt --tls-auth-clients no")
      :format(certs, certs, certs))
    server.tls_url = "rediss://127.0.0.1:" .. server.port2
    clients = {}
  end)
  after_each(function()
    for _, c in ipairs(clients) do c:close() end
    helper.stop_server(server)
  end)

  local function connect(opts)
    local c = assert(redlease.connect(server.tls_url, opts))
    clients[#clients + 1] = c
    return c
  end

  it("locks over verified TLS", function()
    assert.is_true(redlease.tls_supported)
    local lock = connect({ tls_ca_file = certs .. "/ca.crt" }):lock("tls-job")
    local guard = assert(lock:acquire({ timeout = 0 }))
    assert.equal(1, helper.count(helper.hash(server, "tls-job")))
    assert(guard:release())
    assert.equal(0, helper.raw(server, "EXISTS", "tls-job"))
  end)

  it("refuses a certificate it cannot verify, and says why", function()
    local lock = connect({ tls_ca_file = certs .. "/other-ca.crt", connect_timeout = 2 })
      :lock("tls-job")
    local guard, err = lock:acquire({ timeout = 0 })
    assert.is_nil(guard)
    assert.matches("^connection: .*verification failed", err)
  end)

  it("names the bad TLS option", function()
    local client, err = redlease.connect(server.tls_url, { tls_ca_file = "/nonexistent/ca" })
    assert.is_nil(client)
    assert.matches("^argument: bad argument 'tls_ca_file' to 'connect' %(tls_ca_file: cannot read",
      err)
    client, err = redlease.connect(server.url, { tls_ca_file = certs .. "/ca.crt" })
    assert.is_nil(client)
    assert.matches("^argument: bad argument 'options' to 'connect' %(.*rediss://", err)
    client, err = redlease.connect(server.tls_url, { tls_insecure_skip_verify = "yes" })
    assert.is_nil(client)
    assert.matches("'tls_insecure_skip_verify' to 'connect' %(boolean expected", err)
  end)
end)
