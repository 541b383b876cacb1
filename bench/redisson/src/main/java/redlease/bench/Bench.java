package redlease.bench;

import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStream;
import java.io.InputStreamReader;
import java.io.OutputStream;
import java.io.PrintWriter;
import java.lang.management.ManagementFactory;
import java.lang.management.ThreadInfo;
import java.lang.management.ThreadMXBean;
import java.net.Socket;
import java.net.URI;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Collection;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.concurrent.BrokenBarrierException;
import java.util.concurrent.CyclicBarrier;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.locks.LockSupport;

import io.netty.bootstrap.Bootstrap;
import io.netty.channel.Channel;
import io.netty.channel.ChannelHandlerContext;
import io.netty.channel.ChannelOutboundHandlerAdapter;
import io.netty.channel.ChannelPromise;

import org.redisson.Redisson;
import org.redisson.api.BatchResult;
import org.redisson.api.RBatch;
import org.redisson.api.RLock;
import org.redisson.api.RedissonClient;
import org.redisson.client.NettyHook;
import org.redisson.client.protocol.CommandData;
import org.redisson.config.Config;

/**
 * Redisson's rows of the benchmark page (bench/README.md, "Adding a library"): one measure per
 * run, printing one JSON object {@code {"measure": M, "rows": [...]}} with {@code "impl":
 * "redisson"}, measured the way bench/python and bench/c measure redlease and the Python peers.
 *
 * <pre>
 * Bench cycles    URL --cycles N --seconds S
 * Bench parallel  URL --threads T --seconds S
 * Bench handoff   URL --rounds N
 * Bench contended URL --workers W --procs P --seconds S
 * Bench watchdog  URL --timeout-ms T --periods K --sizes N,N,...
 * Bench semaphore URL --cycles N --seconds S --rounds R      (SemaphoreBench: RSemaphore)
 * </pre>
 *
 * Every lock is Redisson's {@code RLock} (getLock) in watchdog mode, as redlease's Python rows
 * take theirs: {@code tryLock()} for a single try, {@code lock()} to wait forever,
 * {@code tryLock(wait, unit)} to wait at most that long. The client uses Redisson's default
 * configuration apart from the address (and the watchdog timeout in the watchdog measure).
 * The JVM compiles hot code after it has run a while, so every measure warms up first (counted
 * nowhere). Times are System.nanoTime, which HotSpot on Linux reads from CLOCK_MONOTONIC: one
 * clock for every process of the machine, as the Python scripts' time.monotonic; the hand-off
 * measure checks that on each run before it starts.
 *
 * Hand-off and contended start more JVMs of this same program (same java, same JVM options,
 * same class path) as the waiter and the worker processes.
 */
public final class Bench {

    private static final String IMPL = "redisson";
    private static final String LABEL = "Redisson RLock (Java)";

    private Bench() {
    }

    // ---- arguments, JSON, the client ----------------------------------------------------------

    private static Map<String, String> options(String[] args, int from) {
        Map<String, String> o = new HashMap<>();
        for (int i = from; i < args.length; i++) {
            if (!args[i].startsWith("--") || i + 1 >= args.length) {
                throw new IllegalArgumentException("expected --key value, got " + args[i]);
            }
            o.put(args[i].substring(2), args[++i]);
        }
        return o;
    }

    private static String need(Map<String, String> o, String key) {
        String v = o.get(key);
        if (v == null) {
            throw new IllegalArgumentException("missing --" + key);
        }
        return v;
    }

    static String json(Object v) {
        StringBuilder b = new StringBuilder();
        json(b, v);
        return b.toString();
    }

    private static void json(StringBuilder b, Object v) {
        if (v == null) {
            b.append("null");
        } else if (v instanceof String s) {
            b.append('"');
            for (char c : s.toCharArray()) {
                if (c == '"' || c == '\\') {
                    b.append('\\').append(c);
                } else if (c < 0x20) {
                    b.append(String.format("\\u%04x", (int) c));
                } else {
                    b.append(c);
                }
            }
            b.append('"');
        } else if (v instanceof Double d) {
            b.append(d.isNaN() || d.isInfinite() ? "null" : d.toString());
        } else if (v instanceof Number || v instanceof Boolean) {
            b.append(v);
        } else if (v instanceof Map<?, ?> m) {
            b.append('{');
            boolean first = true;
            for (Map.Entry<?, ?> e : m.entrySet()) {
                if (!first) {
                    b.append(", ");
                }
                first = false;
                json(b, String.valueOf(e.getKey()));
                b.append(": ");
                json(b, e.getValue());
            }
            b.append('}');
        } else if (v instanceof Collection<?> c) {
            b.append('[');
            boolean first = true;
            for (Object x : c) {
                if (!first) {
                    b.append(", ");
                }
                first = false;
                json(b, x);
            }
            b.append(']');
        } else if (v instanceof long[] a) {
            List<Long> l = new ArrayList<>();
            for (long x : a) {
                l.add(x);
            }
            json(b, l);
        } else {
            throw new IllegalArgumentException("no JSON for " + v.getClass());
        }
    }

    private static void print(String measure, List<Map<String, Object>> rows, Map<String, Object> extra) {
        Map<String, Object> out = new LinkedHashMap<>();
        out.put("measure", measure);
        if (extra != null) {
            out.putAll(extra);
        }
        out.put("rows", rows);
        System.out.println(json(out));
        System.out.flush();
    }

    private static Map<String, Object> row() {
        Map<String, Object> r = new LinkedHashMap<>();
        r.put("impl", IMPL);
        r.put("label", LABEL);
        r.put("version", redissonVersion());
        return r;
    }

    static String redissonVersion() {
        try (InputStream in = Redisson.class.getClassLoader()
                .getResourceAsStream("META-INF/maven/org.redisson/redisson/pom.properties")) {
            if (in != null) {
                Properties p = new Properties();
                p.load(in);
                return p.getProperty("version");
            }
        } catch (IOException e) {
            // fall through
        }
        return Redisson.class.getPackage().getImplementationVersion();
    }

    private static URI uri(String url) {
        URI uri = URI.create(url);
        if (!"redis".equals(uri.getScheme()) || uri.getHost() == null || uri.getPort() < 0) {
            throw new IllegalArgumentException("expected redis://host:port, got " + url);
        }
        return uri;
    }

    /** Redisson's defaults (pools, threads, codec, script cache) apart from the address. */
    private static Config config(String url) {
        URI uri = uri(url);
        Config config = new Config();
        config.useSingleServer().setAddress("redis://" + uri.getHost() + ":" + uri.getPort());
        return config;
    }

    private static RedissonClient client(String url) {
        return Redisson.create(config(url));
    }

    private static double median(List<Double> xs) {
        if (xs.isEmpty()) {
            return Double.NaN;
        }
        List<Double> s = new ArrayList<>(xs);
        s.sort(null);
        int n = s.size();
        return n % 2 == 1 ? s.get(n / 2) : (s.get(n / 2 - 1) + s.get(n / 2)) / 2;
    }

    /** Another JVM running this program: same java binary, JVM options and class path. */
    private static Process spawn(String... args) throws IOException {
        List<String> cmd = new ArrayList<>();
        cmd.add(ProcessHandle.current().info().command().orElse("java"));
        cmd.addAll(ManagementFactory.getRuntimeMXBean().getInputArguments());
        cmd.add("-cp");
        cmd.add(System.getProperty("java.class.path"));
        cmd.add(Bench.class.getName());
        cmd.addAll(Arrays.asList(args));
        return new ProcessBuilder(cmd).redirectError(ProcessBuilder.Redirect.INHERIT).start();
    }

    private static BufferedReader reader(Process p) {
        return new BufferedReader(new InputStreamReader(p.getInputStream(), StandardCharsets.UTF_8));
    }

    private static PrintWriter writer(Process p) {
        return new PrintWriter(p.getOutputStream(), true, StandardCharsets.UTF_8);
    }

    private static BufferedReader stdin() {
        return new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8));
    }

    private static void fail(String why) {
        System.err.println("Bench: " + why);
        System.exit(1);
    }

    // ---- 1: one thread ------------------------------------------------------------------------

    /** bench/python/cycles.py one_thread: tryLock() + unlock(), N cycles or S seconds. */
    static void cycles(String url, Map<String, String> o) {
        long cycles = Long.parseLong(need(o, "cycles"));
        double seconds = Double.parseDouble(need(o, "seconds"));
        RedissonClient r = client(url);
        RLock lock = r.getLock("bench:cycles:redisson");
        // warm-up: connections, the JIT (the Python rows warm up 50 cycles; a JVM needs more)
        long warm = System.nanoTime() + 1_000_000_000L;
        for (int i = 0; i < 3000 && System.nanoTime() < warm; i++) {
            if (!lock.tryLock()) {
                fail("warm-up tryLock failed");
            }
            lock.unlock();
        }
        long done = 0;
        long start = System.nanoTime();
        long deadline = start + (long) (seconds * 1e9);
        while (done < cycles) {
            for (int i = 0; i < 100; i++) {
                if (!lock.tryLock()) {
                    fail("an uncontended tryLock failed");
                }
                lock.unlock();
            }
            done += 100;
            if (System.nanoTime() > deadline) {
                break;
            }
        }
        double elapsed = (System.nanoTime() - start) / 1e9;
        r.shutdown();
        Map<String, Object> row = row();
        row.put("threads", 1);
        row.put("cycles", done);
        row.put("seconds", elapsed);
        row.put("cycles_per_s", done / elapsed);
        print("cycles", List.of(row), null);
    }

    // ---- 1b: many threads, own lock names -------------------------------------------------------

    /** bench/python/cycles.py many_threads. */
    static void parallel(String url, Map<String, String> o) throws Exception {
        int threads = Integer.parseInt(need(o, "threads"));
        double seconds = Double.parseDouble(need(o, "seconds"));
        RedissonClient r = client(url);
        long[] counts = new long[threads];
        List<String> errors = new ArrayList<>();
        CyclicBarrier ready = new CyclicBarrier(threads + 1);
        java.util.concurrent.atomic.AtomicBoolean stop = new java.util.concurrent.atomic.AtomicBoolean();
        List<Thread> pool = new ArrayList<>();
        for (int t = 0; t < threads; t++) {
            int i = t;
            Thread th = new Thread(() -> {
                try {
                    RLock lock = r.getLock("bench:parallel:" + i);
                    for (int k = 0; k < 500; k++) { // warm-up (Python: 20)
                        lock.tryLock();
                        lock.unlock();
                    }
                    ready.await();
                    long n = 0;
                    while (!stop.get()) {
                        if (!lock.tryLock()) {
                            throw new IllegalStateException("an uncontended tryLock failed");
                        }
                        lock.unlock();
                        n++;
                    }
                    counts[i] = n;
                } catch (InterruptedException | BrokenBarrierException | RuntimeException e) {
                    synchronized (errors) {
                        errors.add(e.toString());
                    }
                    ready.reset();
                }
            }, "bench-" + t);
            th.start();
            pool.add(th);
        }
        ready.await();
        long start = System.nanoTime();
        Thread.sleep((long) (seconds * 1000));
        stop.set(true);
        for (Thread th : pool) {
            th.join();
        }
        double elapsed = (System.nanoTime() - start) / 1e9;
        r.shutdown();
        if (!errors.isEmpty()) {
            fail(String.join("; ", errors));
        }
        long total = 0;
        long min = Long.MAX_VALUE;
        long max = 0;
        for (long c : counts) {
            total += c;
            min = Math.min(min, c);
            max = Math.max(max, c);
        }
        Map<String, Object> row = row();
        row.put("threads", threads);
        row.put("cycles", total);
        row.put("seconds", elapsed);
        row.put("cycles_per_s", total / elapsed);
        row.put("per_thread_min", min);
        row.put("per_thread_max", max);
        print("parallel", List.of(row), null);
    }

    // ---- 2: hand-off between two processes ------------------------------------------------------

    private static final String HANDOFF = "bench:handoff:redisson";
    private static final int HANDOFF_WARMUP = 30;

    /** The waiter process: "go" -> lock(), note the time, unlock(), print the time. */
    static void handoffWaiter(String url) throws IOException {
        RedissonClient r = client(url);
        RLock lock = r.getLock(HANDOFF);
        System.out.println("ready");
        System.out.flush();
        BufferedReader in = stdin();
        for (String line; (line = in.readLine()) != null; ) {
            if (line.equals("clock")) {
                System.out.println(System.nanoTime());
            } else if (line.equals("go")) {
                lock.lock();
                long held = System.nanoTime();
                lock.unlock();
                System.out.println(held);
            } else {
                break;
            }
            System.out.flush();
        }
        r.shutdown();
    }

    /** bench/python/handoff.py holder: the waiter is a second JVM. */
    static void handoff(String url, Map<String, String> o) throws Exception {
        int rounds = Integer.parseInt(need(o, "rounds"));
        RedissonClient r = client(url);
        RLock lock = r.getLock(HANDOFF);
        Process child = spawn("handoff-waiter", url);
        BufferedReader cin = reader(child);
        PrintWriter cout = writer(child);
        if (!"ready".equals(cin.readLine())) {
            fail("the waiter did not start");
        }
        // The two processes' nanoTime must be one clock: the waiter's reading has to fall
        // between two readings of ours taken around the request.
        long widest = 0;
        for (int i = 0; i < 20; i++) {
            long t0 = System.nanoTime();
            cout.println("clock");
            long tw = Long.parseLong(cin.readLine().trim());
            long t1 = System.nanoTime();
            if (tw < t0 || tw > t1) {
                fail("System.nanoTime is not one clock across processes: " + t0 + " " + tw + " " + t1);
            }
            widest = Math.max(widest, t1 - t0);
        }
        List<Double> lat = new ArrayList<>();
        for (int i = 0; i < rounds + HANDOFF_WARMUP; i++) {
            lock.lock();
            cout.println("go");
            LockSupport.parkNanos(3_000_000L); // the waiter is blocked in lock() by then
            long released = System.nanoTime();
            lock.unlock();
            String line = cin.readLine();
            if (line == null) {
                fail("the waiter died");
            }
            if (i >= HANDOFF_WARMUP) {
                lat.add((Long.parseLong(line.trim()) - released) / 1e6);
            }
        }
        cout.close();
        child.waitFor();
        r.shutdown();
        lat.sort(null);
        Map<String, Object> row = row();
        row.put("rounds", rounds);
        row.put("warmup_rounds", HANDOFF_WARMUP);
        row.put("clock_check_ms", widest / 1e6);
        row.put("latencies_ms", lat);
        print("handoff", List.of(row), null);
    }

    // ---- 3: contended, workers over processes ----------------------------------------------------

    private static final String CONTENDED = "bench:contended:redisson";

    /** One worker process: THREADS workers; reads "start end" (nanoTime), prints the notes. */
    static void contendedChild(String url, int first, int threads) throws Exception {
        RedissonClient r = client(url);
        RLock warm = r.getLock("bench:contended:warm:" + first);
        for (int i = 0; i < 500; i++) { // warm-up on a name of its own
            warm.tryLock();
            warm.unlock();
        }
        System.out.println("ready");
        System.out.flush();
        String[] se = stdin().readLine().trim().split(" ");
        long start = Long.parseLong(se[0]);
        long end = Long.parseLong(se[1]);
        List<List<Long>> notes = new ArrayList<>();
        List<String> errors = new ArrayList<>();
        List<Thread> pool = new ArrayList<>();
        for (int t = 0; t < threads; t++) {
            List<Long> mine = new ArrayList<>();
            notes.add(mine);
            Thread th = new Thread(() -> {
                try {
                    RLock lock = r.getLock(CONTENDED);
                    while (true) {
                        long now = System.nanoTime();
                        if (now >= end) {
                            return;
                        }
                        if (now < start) {
                            LockSupport.parkNanos(start - now);
                            continue;
                        }
                        if (!lock.tryLock(end - now, TimeUnit.NANOSECONDS)) {
                            continue;
                        }
                        mine.add(System.nanoTime());
                        lock.unlock();
                    }
                } catch (InterruptedException | RuntimeException e) {
                    synchronized (errors) {
                        errors.add(e.toString());
                    }
                }
            });
            th.start();
            pool.add(th);
        }
        for (Thread th : pool) {
            th.join();
        }
        r.shutdown();
        if (!errors.isEmpty()) {
            fail(String.join("; ", errors.subList(0, Math.min(3, errors.size()))));
        }
        Map<String, Object> out = new LinkedHashMap<>();
        for (int t = 0; t < threads; t++) {
            out.put(String.valueOf(first + t), notes.get(t));
        }
        System.out.println(json(out));
        System.out.flush();
    }

    /** bench/python/contended.py run. */
    static void contended(String url, Map<String, String> o) throws Exception {
        int workers = Integer.parseInt(need(o, "workers"));
        int procs = Math.min(Integer.parseInt(need(o, "procs")), workers);
        double seconds = Double.parseDouble(need(o, "seconds"));
        List<Process> children = new ArrayList<>();
        List<BufferedReader> outs = new ArrayList<>();
        int first = 0;
        for (int i = 0; i < procs; i++) {
            int n = workers / procs + (i < workers % procs ? 1 : 0);
            Process p = spawn("contended-child", url, String.valueOf(first), String.valueOf(n));
            children.add(p);
            outs.add(reader(p));
            first += n;
        }
        for (BufferedReader in : outs) {
            if (!"ready".equals(in.readLine())) {
                fail("a worker process did not start");
            }
        }
        long start = System.nanoTime() + 200_000_000L;
        long end = start + (long) (seconds * 1e9);
        for (Process p : children) {
            PrintWriter w = writer(p);
            w.println(start + " " + end);
            w.flush();
        }
        Map<Integer, List<Long>> notes = new HashMap<>();
        for (int i = 0; i < procs; i++) {
            String line = outs.get(i).readLine();
            if (children.get(i).waitFor() != 0 || line == null) {
                fail("a worker process failed");
            }
            parseNotes(line, notes);
        }
        List<long[]> order = new ArrayList<>();
        int[] perWorker = new int[workers];
        for (Map.Entry<Integer, List<Long>> e : notes.entrySet()) {
            for (long t : e.getValue()) {
                if (t < end) {
                    order.add(new long[] {t, e.getKey()});
                    perWorker[e.getKey()]++;
                }
            }
        }
        order.sort((a, b) -> a[0] != b[0] ? Long.compare(a[0], b[0]) : Long.compare(a[1], b[1]));
        long handoffs = 0;
        for (int i = 1; i < order.size(); i++) {
            if (order.get(i)[1] != order.get(i - 1)[1]) {
                handoffs++;
            }
        }
        List<Integer> pw = new ArrayList<>();
        int min = Integer.MAX_VALUE;
        int max = 0;
        for (int c : perWorker) {
            pw.add(c);
            min = Math.min(min, c);
            max = Math.max(max, c);
        }
        Map<String, Object> row = row();
        row.put("workers", workers);
        row.put("procs", procs);
        row.put("seconds", seconds);
        row.put("acquisitions", order.size());
        row.put("acquisitions_per_s", order.size() / seconds);
        row.put("handoffs", handoffs);
        row.put("handoffs_per_s", handoffs / seconds);
        row.put("per_worker_min", min);
        row.put("per_worker_max", max);
        row.put("per_worker", pw);
        print("contended", List.of(row), null);
    }

    /** Reads {"3": [t, t, ...], "4": [...]} as written by contendedChild. */
    private static void parseNotes(String line, Map<Integer, List<Long>> into) {
        int i = 0;
        while ((i = line.indexOf('"', i)) >= 0) {
            int j = line.indexOf('"', i + 1);
            int w = Integer.parseInt(line.substring(i + 1, j));
            int a = line.indexOf('[', j);
            int b = line.indexOf(']', a);
            List<Long> ts = new ArrayList<>();
            String body = line.substring(a + 1, b).trim();
            if (!body.isEmpty()) {
                for (String s : body.split(",")) {
                    ts.add(Long.parseLong(s.trim()));
                }
            }
            into.put(w, ts);
            i = b;
        }
    }

    // ---- 4: watchdog scale ---------------------------------------------------------------------

    /**
     * Sees every command the client writes (a netty handler at the tail of each connection's
     * pipeline, installed through Config.setNettyHook) and, through its promise, when its reply
     * arrived. While open, EVAL/EVALSHA calls (in the observation window the client sends
     * nothing but renewals) are grouped into rounds: a round starts with a call written after
     * a quarter of a period without any call in flight.
     */
    static final class Tap implements NettyHook {
        static final class Round {
            long start;
            long end;
            long calls;
            long keys;
            long flights;
            long missing;
            long errors;
        }

        final long gapNs;
        final List<Round> rounds = new ArrayList<>();
        volatile boolean open;
        private int inFlight;
        private long lastDone;
        private Round cur;

        Tap(long periodMs) {
            gapNs = periodMs * 1_000_000L / 4;
        }

        @Override
        public void afterBoostrapInitialization(Bootstrap bootstrap) {
        }

        @Override
        public void afterChannelInitialization(Channel channel) {
            channel.pipeline().addLast("bench-tap", new ChannelOutboundHandlerAdapter() {
                @Override
                public void write(ChannelHandlerContext ctx, Object msg, ChannelPromise promise)
                        throws Exception {
                    if (open && msg instanceof CommandData<?, ?> cd) {
                        String name = cd.getCommand().getName();
                        if (name.equals("EVAL") || name.equals("EVALSHA")) {
                            sent(cd);
                        }
                    }
                    super.write(ctx, msg, promise);
                }
            });
        }

        private void sent(CommandData<?, ?> cd) {
            long now = System.nanoTime();
            Object[] params = cd.getParams();
            long keys = params.length > 1 ? Long.parseLong(String.valueOf(params[1])) : 0;
            Round r;
            synchronized (this) {
                if (!open) {
                    return; // written after the window closed: not part of any counted round
                }
                if (cur == null || (inFlight == 0 && now - lastDone > gapNs)) {
                    cur = new Round();
                    cur.start = now;
                    rounds.add(cur);
                }
                r = cur;
                if (inFlight == 0) {
                    r.flights++;
                }
                inFlight++;
                r.calls++;
                r.keys += keys;
            }
            cd.getPromise().whenComplete((res, e) -> {
                long done = System.nanoTime();
                synchronized (this) {
                    inFlight--;
                    lastDone = done;
                    r.end = Math.max(r.end, done);
                    if (e != null) {
                        r.errors++; // e.g. NOSCRIPT, which Redisson answers by sending EVAL
                    } else if (res instanceof Collection<?> c) {
                        r.missing += keys - c.size(); // renewals that found the hold gone
                    }
                }
            });
        }

        synchronized int count() {
            return rounds.size();
        }

        /** No call in flight, and none for `quietNs`. */
        synchronized boolean quiet(long quietNs) {
            return inFlight == 0 && cur != null && System.nanoTime() - lastDone > quietNs;
        }

        synchronized Round last() {
            return cur;
        }

        /**
         * Closes the tap if it is quiet and no round began after the `seen`-th, and returns the
         * rounds from the `from`-th on; null if not quiet yet. Closing and copying under one
         * lock is what keeps a round that began meanwhile (its end not yet known) out.
         */
        synchronized List<Round> closeIfQuiet(long quietNs, int seen, int from) {
            if (!quiet(quietNs) || rounds.size() != seen) {
                return null;
            }
            open = false;
            return new ArrayList<>(rounds.subList(from, rounds.size()));
        }
    }

    /** CPU time (ns) of Redisson's own threads (redisson-netty-*, redisson-timer-*, ...). */
    private static long redissonThreadsCpu(ThreadMXBean tmx) {
        long sum = 0;
        for (ThreadInfo ti : tmx.getThreadInfo(tmx.getAllThreadIds())) {
            if (ti != null && ti.getThreadName().startsWith("redisson")) {
                long c = tmx.getThreadCpuTime(ti.getThreadId());
                if (c > 0) {
                    sum += c;
                }
            }
        }
        return sum;
    }

    private static long processCpu() {
        java.lang.management.OperatingSystemMXBean os = ManagementFactory.getOperatingSystemMXBean();
        if (os instanceof com.sun.management.OperatingSystemMXBean sun) {
            return sun.getProcessCpuTime();
        }
        return -1;
    }

    /** The server's EVAL + EVALSHA call counts (INFO commandstats), on a connection of its own. */
    static long serverEvalCalls(String url) throws IOException {
        URI uri = uri(url);
        try (Socket s = new Socket(uri.getHost(), uri.getPort())) {
            OutputStream out = s.getOutputStream();
            out.write("INFO commandstats\r\n".getBytes(StandardCharsets.US_ASCII));
            out.flush();
            InputStream in = s.getInputStream();
            StringBuilder head = new StringBuilder();
            for (int c; (c = in.read()) != '\n'; ) {
                if (c < 0) {
                    throw new IOException("INFO: connection closed");
                }
                head.append((char) c);
            }
            int len = Integer.parseInt(head.toString().trim().substring(1));
            byte[] body = in.readNBytes(len);
            long calls = 0;
            for (String line : new String(body, StandardCharsets.UTF_8).split("\r\n")) {
                if (line.startsWith("cmdstat_eval:") || line.startsWith("cmdstat_evalsha:")) {
                    for (String kv : line.substring(line.indexOf(':') + 1).split(",")) {
                        if (kv.startsWith("calls=")) {
                            calls += Long.parseLong(kv.substring(6));
                        }
                    }
                }
            }
            return calls;
        }
    }

    static void watchdog(String url, Map<String, String> o) throws Exception {
        long timeoutMs = Long.parseLong(need(o, "timeout-ms"));
        int periods = Integer.parseInt(need(o, "periods"));
        long periodMs = timeoutMs / 3; // Redisson renews every lockWatchdogTimeout / 3
        List<Map<String, Object>> rows = new ArrayList<>();
        for (String size : need(o, "sizes").split(",")) {
            rows.add(watchdogSize(url, timeoutMs, periodMs, periods, Integer.parseInt(size.trim())));
        }
        Map<String, Object> extra = new LinkedHashMap<>();
        extra.put("watchdog_timeout_ms", timeoutMs);
        extra.put("period_ms", periodMs);
        print("watchdog", rows, extra);
    }

    private static Map<String, Object> watchdogSize(String url, long timeoutMs, long periodMs,
                                                    int periods, int n) throws Exception {
        Tap tap = new Tap(periodMs);
        Config config = config(url);
        config.setLockWatchdogTimeout(timeoutMs);
        config.setNettyHook(tap);
        RedissonClient r = Redisson.create(config);
        ThreadMXBean tmx = ManagementFactory.getThreadMXBean();
        String prefix = "bench:wd:redisson:" + n + ":";
        List<String> names = new ArrayList<>(n);
        for (int i = 0; i < n; i++) {
            names.add(prefix + i);
        }
        // N holds on N names, four threads (as bench_watchdog.c), each thread holding many
        tap.open = true;
        int threads = 4;
        List<Thread> pool = new ArrayList<>();
        AtomicLong failed = new AtomicLong();
        long t0 = System.nanoTime();
        for (int t = 0; t < threads; t++) {
            int from = n * t / threads;
            int to = n * (t + 1) / threads;
            Thread th = new Thread(() -> {
                for (int i = from; i < to; i++) {
                    if (!r.getLock(names.get(i)).tryLock()) {
                        failed.incrementAndGet();
                    }
                }
            });
            th.start();
            pool.add(th);
        }
        // Redisson renews a hold while its lock entry lives, whether or not its thread does
        for (Thread th : pool) {
            th.join();
        }
        double acquireS = (System.nanoTime() - t0) / 1e9;
        if (failed.get() > 0) {
            fail(failed.get() + " of " + n + " tryLock() calls failed");
        }
        // the window opens after a first round over all N has ended
        long quietNs = Math.max(2_000_000L, periodMs * 1_000_000L / 10);
        long waitUntil = System.nanoTime() + 4 * periodMs * 1_000_000L + 30_000_000_000L;
        while (true) {
            Tap.Round last = tap.last();
            if (last != null && last.keys >= n && tap.quiet(quietNs)) {
                break;
            }
            if (System.nanoTime() > waitUntil) {
                fail("no renewal round over all " + n + " holds");
            }
            Thread.sleep(1);
        }
        int firstRound = tap.count();
        long wStart = System.nanoTime();
        long cpu0 = processCpu();
        long evals0 = serverEvalCalls(url);
        // Redisson threads' CPU at each quiet point after a round: per-round CPU is the
        // difference between consecutive points
        List<Double> roundCpu = new ArrayList<>();
        long lastCpu = redissonThreadsCpu(tmx);
        int seen = firstRound;
        long wEnd = wStart + periods * periodMs * 1_000_000L;
        List<Tap.Round> window = null;
        while (window == null) {
            long now = System.nanoTime();
            if (tap.count() > seen && tap.quiet(quietNs)) {
                long c = redissonThreadsCpu(tmx);
                roundCpu.add((c - lastCpu) / 1e6);
                lastCpu = c;
                seen = tap.count();
            }
            if (now > wEnd) {
                window = tap.closeIfQuiet(quietNs, seen, firstRound);
            }
            if (window == null && now > wEnd + 10 * periodMs * 1_000_000L) {
                fail("a renewal round never ended");
            }
            if (window == null) {
                Thread.sleep(1);
            }
        }
        long cpu1 = processCpu();
        long evals1 = serverEvalCalls(url);
        int rounds = window.size();
        List<Double> roundMs = new ArrayList<>();
        long calls = 0;
        long flights = 0;
        long missing = 0;
        int full = 0;
        long errors = 0;
        for (Tap.Round rd : window) {
            System.err.printf("watchdog %d holds: round of %.3f ms, %d calls, %d keys, %d flights, %d missing, %d errors%n",
                              n, (rd.end - rd.start) / 1e6, rd.calls, rd.keys, rd.flights, rd.missing, rd.errors);
            errors += rd.errors;
            roundMs.add((rd.end - rd.start) / 1e6);
            calls += rd.calls;
            flights += rd.flights;
            missing += rd.missing;
            if (rd.keys >= n) {
                full++;
            }
        }
        // every key still there with a lease left (one batch of PTTL)
        RBatch batch = r.createBatch();
        for (String name : names) {
            batch.getKeys().remainTimeToLiveAsync(name);
        }
        BatchResult<?> res = batch.execute();
        long live = 0;
        for (Object x : res.getResponses()) {
            if (x instanceof Number num && num.longValue() > 0) {
                live++;
            }
        }
        r.shutdown();
        Map<String, Object> row = row();
        row.put("holds", n);
        row.put("acquire_s", acquireS);
        row.put("rounds", rounds);
        row.put("full_rounds", full);
        row.put("round_ms_median", median(roundMs));
        row.put("round_net_ms_median", null);
        row.put("round_trips_per_round", rounds > 0 ? (double) flights / rounds : null);
        row.put("calls_per_round", rounds > 0 ? (double) calls / rounds : null);
        row.put("server_calls_per_round", rounds > 0 ? (double) (evals1 - evals0) / rounds : null);
        row.put("round_cpu_ms_median", roundCpu.isEmpty() ? null : median(roundCpu));
        row.put("process_cpu_ms_per_round", cpu0 >= 0 && rounds > 0 ? (cpu1 - cpu0) / 1e6 / rounds : null);
        row.put("window_s", (System.nanoTime() - wStart) / 1e9);
        row.put("lost", n - live);
        row.put("lost_events", missing);
        row.put("failed_calls", errors);
        row.put("live_keys", live);
        row.put("batch_size", config.getLockWatchdogBatchSize());
        return row;
    }

    // ---- main ----------------------------------------------------------------------------------

    public static void main(String[] args) throws Exception {
        if (args.length < 2) {
            System.err.println("usage: Bench MEASURE REDIS_URL [--key value ...] (see bench/README.md)");
            System.exit(2);
        }
        String url = args[1];
        switch (args[0]) {
            case "cycles" -> cycles(url, options(args, 2));
            case "parallel" -> parallel(url, options(args, 2));
            case "handoff" -> handoff(url, options(args, 2));
            case "handoff-waiter" -> handoffWaiter(url);
            case "contended" -> contended(url, options(args, 2));
            case "contended-child" -> contendedChild(url, Integer.parseInt(args[2]), Integer.parseInt(args[3]));
            case "watchdog" -> watchdog(url, options(args, 2));
            case "semaphore" -> SemaphoreBench.measure(url, options(args, 2));
            case "semaphore-waiter" -> SemaphoreBench.waiter(url);
            default -> {
                System.err.println("Bench: unknown measure " + args[0]);
                System.exit(2);
            }
        }
        System.exit(0);
    }
}
