# The instruction-count guard (bench/callgrind.py): the C core's one-thread cycle (fixed lease and
# watchdog mode), a watchdog round over 10,000 holds and a hand-off, each run under valgrind's
# callgrind (bench/c/callgrind_ops.c), which counts the instructions executed, the same count
# whatever else the machine does. The suite fails when an operation's instructions grow past the
# budget kept in bench/callgrind_budget.json (the count when it was set, plus its margin), and
# proves it bites (a cycle 10% dearer must fail). `make callgrind-budget` measures each operation
# 5 times and rewrites the budget: do it on purpose, and say why in the commit
# (CALLGRIND_WHY="..." is recorded in the file).
SUITES += callgrind

.PHONY: test-callgrind callgrind-budget

test-callgrind: python-install $(B)/callgrind_ops
	@mkdir -p build/results
	$(PY) bench/callgrind.py check --results build/results/callgrind.txt

CALLGRIND_WHY ?=
callgrind-budget: python-install $(B)/callgrind_ops
	$(PY) bench/callgrind.py budget --runs 5 --why "$(CALLGRIND_WHY)"
