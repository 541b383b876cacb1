# The interop suite (tests/interop): redlease's Python and Lua clients against a real Redisson
# (Java, from Maven Central) on the same throwaway redis-server. The Redisson side is one driver
# program (tests/interop/java), built with Maven into build/interop: the jar, its dependencies in
# build/interop/lib. Rebuilt only when its sources or its pom change (Maven's own output goes to
# build/interop/build.log, shown when the build fails).
SUITES += interop

INTEROP_JAVA := tests/interop/java
INTEROP_JAR := $(B)/interop/redlease-interop.jar
INTEROP_SOURCES := $(INTEROP_JAVA)/pom.xml $(shell find $(INTEROP_JAVA)/src -name '*.java' 2>/dev/null)

.PHONY: interop-java test-interop

$(INTEROP_JAR): $(INTEROP_SOURCES)
	@rm -rf $(B)/interop && mkdir -p $(B)/interop
	mvn -q -B -f $(INTEROP_JAVA)/pom.xml -Dinterop.out=$(CURDIR)/$(B)/interop package \
	  >$(B)/interop/build.log 2>&1 || { cat $(B)/interop/build.log; exit 1; }

interop-java: $(INTEROP_JAR)

test-interop: deps python-install lua-rocks interop-java
	@mkdir -p build/results
	cd tests/interop && REDLEASE_RESULTS=$(CURDIR)/build/results/interop.txt \
	  $(CURDIR)/$(PY) -m pytest -q -p no:cacheprovider
