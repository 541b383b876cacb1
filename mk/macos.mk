# macOS (developers' laptops): the core, the Python extension and the Lua rock compiled for
# x86_64 and arm64 macOS with zig's cross compiler, -Werror, and a guard that Linux-only calls are
# refused (scripts/check-macos says what each compiles against). Compiled only: macOS code cannot
# run on this machine.
SUITES += macos

.PHONY: test-macos
test-macos:
	scripts/check-macos
