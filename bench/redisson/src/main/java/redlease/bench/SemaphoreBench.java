package redlease.bench;

import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStreamReader;
import java.io.PrintWriter;
import java.lang.management.ManagementFactory;
import java.net.URI;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.locks.LockSupport;

import org.redisson.Redisson;
import org.redisson.api.RSemaphore;
import org.redisson.api.RedissonClient;
import org.redisson.config.Config;

/**
 * Redisson's semaphore row (bench/python/semaphore.py measures redlease's the same way):
 * {@code Bench semaphore URL --cycles N --seconds S --rounds R}.
 *
 * <ul>
 * <li>cycles: one thread, an RSemaphore of one permit, {@code tryAcquire()} + {@code release()},
 *     N cycles or S seconds, after a warm-up;</li>
 * <li>hand-off: the holder has the only permit, a second JVM waits in {@code acquire()}; from
 *     just before the holder's {@code release()} to the waiter's {@code acquire()} returning
 *     (System.nanoTime, CLOCK_MONOTONIC on Linux: one clock for both processes).</li>
 * </ul>
 */
final class SemaphoreBench {
    private static final String CYCLES = "bench:semaphore:cycles:redisson";
    private static final String HANDOFF = "bench:semaphore:handoff:redisson";
    private static final int WARMUP_ROUNDS = 30;

    private SemaphoreBench() {
    }

    private static RedissonClient client(String url) {
        URI uri = URI.create(url);
        Config config = new Config();
        config.useSingleServer().setAddress("redis://" + uri.getHost() + ":" + uri.getPort());
        return Redisson.create(config);
    }

    private static void fail(String why) {
        System.err.println("SemaphoreBench: " + why);
        System.exit(1);
    }

    /** One semaphore of one permit, whatever an earlier run left. */
    private static RSemaphore onePermit(RedissonClient r, String name) {
        RSemaphore s = r.getSemaphore(name);
        s.delete();
        if (!s.trySetPermits(1)) {
            fail("trySetPermits(1) failed on " + name);
        }
        return s;
    }

    static void measure(String url, Map<String, String> o) throws Exception {
        long cycles = Long.parseLong(o.get("cycles"));
        double seconds = Double.parseDouble(o.get("seconds"));
        int rounds = Integer.parseInt(o.get("rounds"));
        RedissonClient r = client(url);
        RSemaphore s = onePermit(r, CYCLES);
        long warm = System.nanoTime() + 1_000_000_000L;
        for (int i = 0; i < 3000 && System.nanoTime() < warm; i++) {
            if (!s.tryAcquire()) {
                fail("warm-up tryAcquire failed");
            }
            s.release();
        }
        long done = 0;
        long start = System.nanoTime();
        long deadline = start + (long) (seconds * 1e9);
        while (done < cycles) {
            for (int i = 0; i < 100; i++) {
                if (!s.tryAcquire()) {
                    fail("an uncontended tryAcquire failed");
                }
                s.release();
            }
            done += 100;
            if (System.nanoTime() > deadline) {
                break;
            }
        }
        double elapsed = (System.nanoTime() - start) / 1e9;
        List<Double> lat = handoff(url, r, rounds);
        r.shutdown();
        Map<String, Object> row = new LinkedHashMap<>();
        row.put("impl", "redisson");
        row.put("label", "Redisson RSemaphore (Java)");
        row.put("version", Bench.redissonVersion());
        row.put("cycles", done);
        row.put("seconds", elapsed);
        row.put("cycles_per_s", done / elapsed);
        row.put("rounds", rounds);
        row.put("warmup_rounds", WARMUP_ROUNDS);
        row.put("latencies_ms", lat);
        Map<String, Object> out = new LinkedHashMap<>();
        out.put("measure", "semaphore");
        out.put("rows", List.of(row));
        System.out.println(Bench.json(out));
        System.out.flush();
    }

    private static List<Double> handoff(String url, RedissonClient r, int rounds) throws Exception {
        RSemaphore s = onePermit(r, HANDOFF);
        List<String> cmd = new ArrayList<>();
        cmd.add(ProcessHandle.current().info().command().orElse("java"));
        cmd.addAll(ManagementFactory.getRuntimeMXBean().getInputArguments());
        cmd.addAll(Arrays.asList("-cp", System.getProperty("java.class.path"),
                Bench.class.getName(), "semaphore-waiter", url));
        Process child = new ProcessBuilder(cmd).redirectError(ProcessBuilder.Redirect.INHERIT).start();
        BufferedReader cin = new BufferedReader(
                new InputStreamReader(child.getInputStream(), StandardCharsets.UTF_8));
        PrintWriter cout = new PrintWriter(child.getOutputStream(), true, StandardCharsets.UTF_8);
        if (!"ready".equals(cin.readLine())) {
            fail("the waiter did not start");
        }
        List<Double> lat = new ArrayList<>();
        for (int i = 0; i < rounds + WARMUP_ROUNDS; i++) {
            s.acquire();
            cout.println("go");
            LockSupport.parkNanos(3_000_000L); // the waiter is blocked in acquire() by then
            long released = System.nanoTime();
            s.release();
            String line = cin.readLine();
            if (line == null) {
                fail("the waiter died");
            }
            if (i >= WARMUP_ROUNDS) {
                lat.add((Long.parseLong(line.trim()) - released) / 1e6);
            }
        }
        cout.close();
        child.waitFor();
        lat.sort(null);
        return lat;
    }

    /** The waiter JVM: "go" -> acquire(), note the time, release(), print the time. */
    static void waiter(String url) throws IOException, InterruptedException {
        RedissonClient r = client(url);
        RSemaphore s = r.getSemaphore(HANDOFF);
        System.out.println("ready");
        System.out.flush();
        BufferedReader in = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8));
        for (String line; (line = in.readLine()) != null && line.equals("go"); ) {
            s.acquire();
            long held = System.nanoTime();
            s.release();
            System.out.println(held);
            System.out.flush();
        }
        r.shutdown();
    }
}
