-- For development: luarocks --lua-version 5.4 make luarocks/redlease-scm-1.rockspec, which
-- compiles in the checkout. Releases: `make rock-src` makes redlease-<version>-1.rockspec from
-- this one (scripts/gen-rockspec) and a .src.rock that builds elsewhere (see README.md).
-- The C core (csrc/core) is compiled into redlease.core; hiredis and OpenSSL (for rediss://)
-- come from the system (Debian/Ubuntu: libhiredis-dev libssl-dev).
rockspec_format = "3.0"
package = "redlease"
version = "scm-1"

source = {
   url = "git+https://example.invalid/redlease.git", -- not fetched by `luarocks make`
}

description = {
   summary = "Redisson-compatible distributed locks on Redis",
   detailed = [[
Reentrant locks with Redisson's semantics and Redis format (RLock): a watchdog renews the lease
while the holder works, waiters are woken by pub/sub, and a crashed holder's lock expires on its
own. Holds belong to a coroutine. Lua 5.1, LuaJIT 2.1, 5.2, 5.3 and 5.4 (with `<close>`).
Inside nginx (OpenResty, lua-nginx-module) the same API runs on cosockets (redlease.resty).
]],
   license = "MIT",
}

dependencies = {
   "lua >= 5.1, < 5.5",
}

external_dependencies = {
   HIREDIS = {
      header = "hiredis/hiredis.h",
      library = "hiredis",
   },
   OPENSSL = {
      header = "openssl/ssl.h",
      library = "ssl",
   },
}

build = {
   type = "builtin",
   modules = {
      -- inside nginx, `require "redlease"` picks the OpenResty backend (redlease.resty, pure Lua)
      -- BEGIN modules: every luarocks/redlease/**/*.lua (scripts/gen-rockspec --write)
      ["redlease"] = "luarocks/redlease/init.lua",
      ["redlease.args"] = "luarocks/redlease/args.lua",
      ["redlease.events"] = "luarocks/redlease/events.lua",
      ["redlease.guard"] = "luarocks/redlease/guard.lua",
      ["redlease.holds"] = "luarocks/redlease/holds.lua",
      ["redlease.latch"] = "luarocks/redlease/latch.lua",
      ["redlease.lock"] = "luarocks/redlease/lock.lua",
      ["redlease.methods"] = "luarocks/redlease/methods.lua",
      ["redlease.multilock"] = "luarocks/redlease/multilock.lua",
      ["redlease.resty"] = "luarocks/redlease/resty/init.lua",
      ["redlease.resty.calls"] = "luarocks/redlease/resty/calls.lua",
      ["redlease.resty.client"] = "luarocks/redlease/resty/client.lua",
      ["redlease.resty.cluster"] = "luarocks/redlease/resty/cluster.lua",
      ["redlease.resty.cluster_renew"] = "luarocks/redlease/resty/cluster_renew.lua",
      ["redlease.resty.cluster_sub"] = "luarocks/redlease/resty/cluster_sub.lua",
      ["redlease.resty.conn"] = "luarocks/redlease/resty/conn.lua",
      ["redlease.resty.failover"] = "luarocks/redlease/resty/failover.lua",
      ["redlease.resty.guard"] = "luarocks/redlease/resty/guard.lua",
      ["redlease.resty.inspect"] = "luarocks/redlease/resty/inspect.lua",
      ["redlease.resty.keys"] = "luarocks/redlease/resty/keys.lua",
      ["redlease.resty.latch"] = "luarocks/redlease/resty/latch.lua",
      ["redlease.resty.lease_ops"] = "luarocks/redlease/resty/lease_ops.lua",
      ["redlease.resty.lock"] = "luarocks/redlease/resty/lock.lua",
      ["redlease.resty.multilock"] = "luarocks/redlease/resty/multilock.lua",
      ["redlease.resty.owner"] = "luarocks/redlease/resty/owner.lua",
      ["redlease.resty.phase"] = "luarocks/redlease/resty/phase.lua",
      ["redlease.resty.pipe"] = "luarocks/redlease/resty/pipe.lua",
      ["redlease.resty.resp"] = "luarocks/redlease/resty/resp.lua",
      ["redlease.resty.runner"] = "luarocks/redlease/resty/runner.lua",
      ["redlease.resty.scripts"] = "luarocks/redlease/resty/scripts.lua",
      ["redlease.resty.semaphore"] = "luarocks/redlease/resty/semaphore.lua",
      ["redlease.resty.sentinel"] = "luarocks/redlease/resty/sentinel.lua",
      ["redlease.resty.slots"] = "luarocks/redlease/resty/slots.lua",
      ["redlease.resty.subscriber"] = "luarocks/redlease/resty/subscriber.lua",
      ["redlease.resty.takeback"] = "luarocks/redlease/resty/takeback.lua",
      ["redlease.resty.tls"] = "luarocks/redlease/resty/tls.lua",
      ["redlease.resty.url"] = "luarocks/redlease/resty/url.lua",
      ["redlease.resty.validity"] = "luarocks/redlease/resty/validity.lua",
      ["redlease.resty.wake_grace"] = "luarocks/redlease/resty/wake_grace.lua",
      ["redlease.resty.watchdog"] = "luarocks/redlease/resty/watchdog.lua",
      ["redlease.semaphore"] = "luarocks/redlease/semaphore.lua",
      ["redlease.with"] = "luarocks/redlease/with.lua",
      -- END modules
      ["redlease.core"] = {
         sources = {
            -- BEGIN sources: every csrc/lua and csrc/core C file (scripts/gen-rockspec --write)
            "csrc/lua/client.c",
            "csrc/lua/countdown.c",
            "csrc/lua/family.c",
            "csrc/lua/fencing.c",
            "csrc/lua/hold.c",
            "csrc/lua/lock.c",
            "csrc/lua/module.c",
            "csrc/lua/multilock.c",
            "csrc/lua/ops.c",
            "csrc/lua/options.c",
            "csrc/lua/semaphore.c",
            "csrc/core/batch.c",
            "csrc/core/client.c",
            "csrc/core/clock.c",
            "csrc/core/contexts.c",
            "csrc/core/deferred.c",
            "csrc/core/error.c",
            "csrc/core/events.c",
            "csrc/core/extend.c",
            "csrc/core/failover_grace.c",
            "csrc/core/family/countdown.c",
            "csrc/core/family/expirable.c",
            "csrc/core/family/family.c",
            "csrc/core/family/family_async.c",
            "csrc/core/family/fencing.c",
            "csrc/core/family/multilock.c",
            "csrc/core/family/multilock_async.c",
            "csrc/core/family/semaphore.c",
            "csrc/core/fork.c",
            "csrc/core/handoff.c",
            "csrc/core/holder_names.c",
            "csrc/core/holds.c",
            "csrc/core/inspect.c",
            "csrc/core/kinds/fair.c",
            "csrc/core/kinds/fenced.c",
            "csrc/core/kinds/kinds.c",
            "csrc/core/kinds/reentrant.c",
            "csrc/core/kinds/rw.c",
            "csrc/core/lock.c",
            "csrc/core/lock_async.c",
            "csrc/core/lock_calls.c",
            "csrc/core/metrics.c",
            "csrc/core/names.c",
            "csrc/core/options.c",
            "csrc/core/platform.c",
            "csrc/core/random.c",
            "csrc/core/renew_calls.c",
            "csrc/core/scan.c",
            "csrc/core/scripts.c",
            "csrc/core/subscriber.c",
            "csrc/core/threads.c",
            "csrc/core/topology/cluster.c",
            "csrc/core/topology/deploy_cluster.c",
            "csrc/core/topology/deploy_sentinel.c",
            "csrc/core/topology/deploy_standalone.c",
            "csrc/core/topology/redirect.c",
            "csrc/core/topology/renew_cluster.c",
            "csrc/core/topology/replicas.c",
            "csrc/core/topology/sentinel.c",
            "csrc/core/topology/sentinel_watch.c",
            "csrc/core/topology/server_version.c",
            "csrc/core/topology/slots.c",
            "csrc/core/transport/conn.c",
            "csrc/core/transport/conn_name.c",
            "csrc/core/transport/identity.c",
            "csrc/core/transport/pool.c",
            "csrc/core/transport/tls.c",
            "csrc/core/transport/tls_roots.c",
            "csrc/core/transport/url.c",
            "csrc/core/validity.c",
            "csrc/core/waiting.c",
            "csrc/core/wake_grace.c",
            "csrc/core/watch.c",
            "csrc/core/watchdog.c",
            "csrc/core/woken_acquire.c",
            "csrc/core/workers.c",
            "csrc/core/wrong_type.c",
            -- END sources
         },
         defines = { "_GNU_SOURCE", "RL_WITH_TLS" },
         -- BEGIN incdirs: the public header, the core's rooms (scripts/gen-rockspec --write)
         incdirs = { "include", "csrc/core", "csrc/core/family", "csrc/core/kinds", "csrc/core/topology", "csrc/core/transport", "$(HIREDIS_INCDIR)", "$(OPENSSL_INCDIR)" },
         -- END incdirs
         libdirs = { "$(HIREDIS_LIBDIR)", "$(OPENSSL_LIBDIR)" },
         libraries = { "hiredis", "ssl", "crypto", "pthread" },
      },
   },
}
