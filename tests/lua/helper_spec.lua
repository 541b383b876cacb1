-- The suite's own kit: a server it starts is its own, found by its folder, never a server that
-- someone else started on the port it drew (which it would later kill).
local helper = require "helper"

describe("the test kit", function()
  it("a port another server answers on is never taken for the one it starts", function()
    local foreign = helper.start_server()
    local draw, draws = helper.draw_port, 0
    helper.draw_port = function() -- the first attempt draws the foreign server's port
      draws = draws + 1
      return draws <= 2 and foreign.port or draw()
    end
    local ok, mine = pcall(helper.start_server)
    helper.draw_port = draw
    assert.is_true(ok, mine)
    assert.is_true(draws > 2)
    assert.not_equal(foreign.port, mine.port)
    assert.not_equal(foreign.pid, mine.pid)
    helper.stop_server(mine)
    assert.equal("PONG", helper.raw(foreign, "PING")) -- left alone
    helper.stop_server(foreign)
  end)
end)
