-- The tls_* options of connect() for the OpenResty backend, read when the client is made: each
-- is honoured through the cosocket's TLS (sslhandshake with verification and SNI,
-- setclientcert) or refused with an error naming it, never ignored. The words are the C rock's
-- where it has the same error (csrc/core/transport/tls.c, csrc/core/client.c).
--
-- Not honoured, so refused: tls_ca_file and tls_ca_dir. A cosocket verifies the server against
-- nginx's lua_ssl_trusted_certificate (one file per http, server or location block), never a
-- CA of its own, and Lua cannot read which file that directive names: a tls_ca_file taken on
-- trust could differ from it, and the client would then trust CAs its owner did not name.
local tls = {}

local OPTIONS = { "tls_ca_file", "tls_ca_dir", "tls_cert_file", "tls_key_file",
  "tls_server_name", "tls_insecure_skip_verify" }

local function refuse(name, why)
  error({ name = name, why = why }) -- connect() raises it as the rock does
end

-- The file's text, or the rock's "cannot read" refusal.
local function read(name, path)
  local f, err = io.open(path, "rb")
  local text = f and f:read("*a")
  if f then f:close() end
  if not text then
    local why = tostring(err):match("^.-: (.*)$") or tostring(err)
    refuse(name, ("%s: cannot read %s: %s"):format(name, path, why))
  end
  return text
end

local function client_certificate(o)
  if (o.tls_cert_file == nil) ~= (o.tls_key_file == nil) then
    refuse(o.tls_cert_file and "tls_cert_file" or "tls_key_file",
      "tls_cert_file and tls_key_file go together")
  end
  if not o.tls_cert_file then return nil end
  local cert_pem = read("tls_cert_file", o.tls_cert_file)
  local key_pem = read("tls_key_file", o.tls_key_file)
  if (ngx.config.ngx_lua_version or 0) < 10022 then
    refuse("tls_cert_file", "not available in the OpenResty backend with this lua-nginx-module "
      .. "(client certificates need 0.10.22 or later)")
  end
  -- OpenSSL would ask for the passphrase on the terminal (or fail without one)
  if key_pem:find("ENCRYPTED", 1, true) then
    refuse("tls_key_file", ("tls_key_file %s: an encrypted key (no passphrase can be given): "
      .. "decrypt it (openssl pkey -in KEY -out KEY.plain)"):format(o.tls_key_file))
  end
  local ssl = require "ngx.ssl"
  local cert = ssl.parse_pem_cert(cert_pem)
  if not cert or not cert_pem:find("-----BEGIN CERTIFICATE-----", 1, true) then
    refuse("tls_cert_file", ("tls_cert_file %s: not a PEM certificate"):format(o.tls_cert_file))
  end
  local key = ssl.parse_pem_priv_key(key_pem)
  if not key then
    refuse("tls_key_file", ("tls_key_file %s: not an unencrypted PEM private key")
      :format(o.tls_key_file))
  end
  return cert, key
end

-- The TLS settings of endpoint `ep` from the connect options `o` -> nil (no TLS) or
-- { verify =, server_name =, cert =, key =, id = }. Raises {name =, why =} on an option it
-- cannot honour.
local function settings(ep, o)
  local given
  for _, name in ipairs(OPTIONS) do
    if o[name] ~= nil then given = given or name end
  end
  if given and not ep.tls then refuse("options", "the tls_* options need a rediss:// URL") end
  if not ep.tls then return nil end
  for _, name in ipairs { "tls_ca_file", "tls_ca_dir" } do
    if o[name] then
      refuse(name, name .. ": not available in the OpenResty backend: cosockets verify Redis's "
        .. "certificate against nginx's lua_ssl_trusted_certificate, not a CA per client; "
        .. "name your CA file there and leave this option out")
    end
  end
  local cert, key = client_certificate(o)
  -- server_name nil: each connection's own host (a sentinel's, the master they name, a cluster
  -- node's), as the C core's TLS context names it (csrc/core/transport/tls.c)
  local t = { verify = not o.tls_insecure_skip_verify, server_name = o.tls_server_name or ep.host,
    cert = cert, key = key }
  -- connections of other TLS settings are not the same: never one from the same pool
  t.id = ("%s:%s:%s"):format(t.verify and "verify" or "insecure", t.server_name or "(host)",
    o.tls_cert_file and ngx.md5(o.tls_cert_file .. "\0" .. o.tls_key_file) or "")
  return t
end

-- The TLS handshake of a new connection `sock` to `host` with settings `t` (the client
-- certificate, SNI, verification) -> true | nil, why. Closes the socket on failure.
function tls.handshake(sock, t, host)
  if t.cert then
    local set, err = sock:setclientcert(t.cert, t.key)
    if not set then
      sock:close()
      return nil, "client certificate: " .. tostring(err)
    end
  end
  -- false: no session object wanted back; the name is sent as SNI and, when verifying, checked
  -- against the certificate (which nginx verifies against lua_ssl_trusted_certificate)
  local session, err = sock:sslhandshake(false, t.server_name or host, t.verify)
  if not session then
    sock:close()
    return nil, err
  end
  -- A handshake that completes asynchronously can answer success after nginx closed the
  -- connection for a certificate that failed verification: a closed socket says so here.
  if not sock:getreusedtimes() then
    return nil, "the connection was closed during the handshake (certificate verification "
      .. "failed?)"
  end
  return true
end

-- -> settings | nil, the option's name, why.
function tls.settings(ep, o)
  local ok, t = pcall(settings, ep, o)
  if ok then return t end
  if type(t) ~= "table" then error(t, 0) end
  return nil, t.name, t.why
end

return tls
