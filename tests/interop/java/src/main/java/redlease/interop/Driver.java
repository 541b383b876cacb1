package redlease.interop;

import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStreamReader;
import java.io.OutputStreamWriter;
import java.io.PrintWriter;
import java.net.URI;
import java.net.URLDecoder;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletionException;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.TimeUnit;

import org.redisson.Redisson;
import org.redisson.RedissonMultiLock;
import org.redisson.RedissonRedLock;
import org.redisson.api.RAtomicLong;
import org.redisson.api.RCountDownLatch;
import org.redisson.api.RFencedLock;
import org.redisson.api.RLock;
import org.redisson.api.RPermitExpirableSemaphore;
import org.redisson.api.RSemaphore;
import org.redisson.api.RedissonClient;
import org.redisson.config.BaseConfig;
import org.redisson.config.ClusterServersConfig;
import org.redisson.config.Config;
import org.redisson.config.ReadMode;
import org.redisson.config.SingleServerConfig;

/**
 * A real Redisson client driven line by line, for redlease's interop tests
 * (tests/interop/redisson.py starts it and speaks this protocol).
 *
 * <pre>
 * java -jar build/interop/redlease-interop.jar REDIS_URL [--watchdog-ms N] [--timeout-ms N]
 *     [--also REDIS_URL ...]
 * </pre>
 *
 * REDIS_URL is {@code redis://[user[:password]@]host:port[/db]}, or
 * {@code redis+cluster://host1:port1,host2:port2,...} for a Redis Cluster (useClusterServers(),
 * with Redisson's default sharded subscription mode: SSUBSCRIBE/SPUBLISH on Redis 7). {@code --watchdog-ms} is
 * Config.setLockWatchdogTimeout (Redisson's default 30000); {@code --timeout-ms} is the command
 * timeout; each {@code --also} URL gets a RedissonClient of its own (for RedLock, below). Once
 * connected the driver prints {@code ready <client id>} (the id is the first part
 * of every lock owner field it writes), or {@code fatal <exception class> <message>} and exits 1.
 *
 * <h2>Line protocol</h2>
 * UTF-8, one request per line on stdin, one reply per request on stdout, fields separated by
 * one space:
 * <pre>
 * request:  ID THREAD OP KIND NAME [ARG ...]
 * reply:    ID ok [VALUE]
 *           ID err EXCEPTION_CLASS MESSAGE
 * </pre>
 * <ul>
 * <li>ID: any token without spaces, echoed in the reply. Replies come in completion order, not
 *     request order.</li>
 * <li>THREAD: names a Java thread ({@code [A-Za-z0-9_.:-]+}). Each name gets its own
 *     single-thread executor on first use, so Redisson's per-thread ownership is real: requests
 *     for one THREAD run one after the other on that thread, requests for different THREADs run
 *     concurrently (a blocking {@code lock} on t1 does not hold up t2). {@code -}: no thread
 *     (only for the driver ops below).</li>
 * <li>KIND: {@code lock} (getLock), {@code fair} (getFairLock), {@code fenced}
 *     (getFencedLock), {@code read} / {@code write} (getReadWriteLock(NAME).readLock() /
 *     .writeLock()); {@code -} for driver ops. One Redisson object per (KIND, NAME) is kept
 *     for the driver's lifetime, as an application keeps its lock objects.</li>
 * <li>NAME: the lock name, hex-encoded UTF-8 bytes (lowercase or uppercase); {@code -} for
 *     driver ops.</li>
 * <li>ARG: decimal milliseconds or counts; a permit id (the {@code pes} ops) as Redisson gives
 *     it.</li>
 * <li>VALUE: {@code true}/{@code false}, a decimal number, {@code id:<permit id>}, {@code null}
 *     (a Java null), or nothing (void).</li>
 * <li>EXCEPTION_CLASS: the fully qualified class of what the call threw (ExecutionException
 *     and CompletionException unwrapped); MESSAGE: the rest of the line, its line breaks
 *     replaced by spaces.</li>
 * </ul>
 *
 * Lock ops (any KIND unless noted):
 * <pre>
 * lock [leaseMs]                     lock() / lock(lease, ms); blocks
 * lockInterruptibly [leaseMs]        same, interruptible
 * tryLock [waitMs [leaseMs]]         tryLock() / tryLock(wait, ms) / tryLock(wait, lease, ms)
 * unlock                             unlock()
 * forceUnlock                        forceUnlock()
 * isLocked, isHeldByCurrentThread, getHoldCount, remainTimeToLive
 * lockAndGetToken [leaseMs]          fenced only; the token
 * tryLockAndGetToken [waitMs [leaseMs]]  fenced only; the token, or null
 * getToken                           fenced only
 * </pre>
 * The rest of the family, by KIND (one Redisson object per KIND and NAME, as for locks):
 * <pre>
 * semaphore (getSemaphore):  trySetPermits N, addPermits N, acquire [N], tryAcquire [N [waitMs]],
 *     release [N], availablePermits, drainPermits,
 *     cycle N HOLD_MS   N times: acquire(); INCR NAME:inside (RAtomicLong); sleep; DECR; release();
 *                       answers the most holders INCR saw
 * pes (getPermitExpirableSemaphore):  trySetPermits N, acquire [leaseMs],
 *     tryAcquire waitMs [leaseMs], release ID, tryRelease ID, updateLeaseTime ID leaseMs,
 *     availablePermits                 (ids answered as id:ID)
 * latch (getCountDownLatch):  trySetCount N, countDown, getCount, await [waitMs]
 * multi (RedissonMultiLock of getLock(n) for each n of NAME split on ","):  lock [leaseMs],
 *     tryLock [waitMs [leaseMs]], unlock
 * red (RedissonRedLock of getLock(NAME) on this client and each --also client):  the same ops
 * </pre>
 * Driver ops (KIND and NAME {@code -}): {@code threadId} (on THREAD: its Thread.getId(), the
 * second part of its owner field), {@code clientId} (RedissonClient.getId()), {@code ping}
 * (replies {@code pong}), {@code exit} (replies, then shuts down). End of input also shuts down.
 */
public final class Driver {
    private final RedissonClient redisson;
    private final List<RedissonClient> others = new ArrayList<>(); /* --also: for RedLock */
    private final PrintWriter out;
    private final Map<String, ExecutorService> threads = new ConcurrentHashMap<>();
    private final Map<String, RLock> locks = new ConcurrentHashMap<>();
    private final Map<String, Object> family = new ConcurrentHashMap<>();
    private final ExecutorService unthreaded = Executors.newCachedThreadPool(daemon("driver"));

    private Driver(RedissonClient redisson, PrintWriter out) {
        this.redisson = redisson;
        this.out = out;
    }

    public static void main(String[] args) throws IOException {
        PrintWriter out = new PrintWriter(new OutputStreamWriter(System.out, StandardCharsets.UTF_8), false);
        RedissonClient redisson;
        List<RedissonClient> others = new ArrayList<>();
        try {
            redisson = Redisson.create(config(args));
            for (String url : alsoUrls(args)) {
                others.add(Redisson.create(config(new String[] {url})));
            }
        } catch (Throwable e) {
            Throwable cause = unwrap(e);
            out.println("fatal " + cause.getClass().getName() + " " + oneLine(cause.getMessage()));
            out.flush();
            System.exit(1);
            return;
        }
        Driver driver = new Driver(redisson, out);
        driver.others.addAll(others);
        driver.reply("ready " + redisson.getId());
        driver.serve(new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8)));
        driver.shutdown();
        System.exit(0);
    }

    private static Config config(String[] args) {
        if (args.length < 1) {
            throw new IllegalArgumentException("usage: Driver REDIS_URL [--watchdog-ms N] [--timeout-ms N]");
        }
        Config config = new Config();
        // Small pools and thread counts: one process, a handful of locks, a small CI machine.
        config.setThreads(4);
        config.setNettyThreads(4);
        BaseConfig<?> base = args[0].startsWith("redis+cluster://") ? cluster(config, args[0])
                : singleServer(config, args[0]);
        for (int i = 1; i < args.length; i++) {
            String option = args[i];
            if (i + 1 >= args.length) {
                throw new IllegalArgumentException(option + " needs a value");
            }
            if (option.equals("--also")) {
                i++;
                continue;
            }
            long value = Long.parseLong(args[++i]);
            switch (option) {
                case "--watchdog-ms" -> config.setLockWatchdogTimeout(value);
                case "--timeout-ms" -> base.setTimeout(Math.toIntExact(value));
                default -> throw new IllegalArgumentException("unknown option " + option);
            }
        }
        return config;
    }

    /** redis+cluster://host1:port1,host2:port2: the seed nodes; every read at the masters. */
    private static ClusterServersConfig cluster(Config config, String url) {
        ClusterServersConfig cluster = config.useClusterServers()
                .setReadMode(ReadMode.MASTER)
                .setMasterConnectionMinimumIdleSize(2)
                .setMasterConnectionPoolSize(8)
                .setSlaveConnectionMinimumIdleSize(1)
                .setSlaveConnectionPoolSize(2)
                .setSubscriptionConnectionMinimumIdleSize(1)
                .setSubscriptionConnectionPoolSize(4);
        for (String node : url.substring("redis+cluster://".length()).split("/")[0].split(",")) {
            cluster.addNodeAddress("redis://" + node);
        }
        return cluster;
    }

    private static SingleServerConfig singleServer(Config config, String url) {
        URI uri = URI.create(url);
        if (!"redis".equals(uri.getScheme()) || uri.getHost() == null || uri.getPort() < 0) {
            throw new IllegalArgumentException("expected redis://[user[:password]@]host:port[/db], got " + url);
        }
        SingleServerConfig server = config.useSingleServer()
                .setAddress("redis://" + uri.getHost() + ":" + uri.getPort())
                .setConnectionMinimumIdleSize(2)
                .setConnectionPoolSize(8)
                .setSubscriptionConnectionMinimumIdleSize(1)
                .setSubscriptionConnectionPoolSize(4);
        String path = uri.getPath();
        if (path != null && path.length() > 1) {
            server.setDatabase(Integer.parseInt(path.substring(1)));
        }
        String userInfo = uri.getRawUserInfo();
        if (userInfo != null) {
            int colon = userInfo.indexOf(':');
            String user = colon < 0 ? userInfo : userInfo.substring(0, colon);
            if (colon >= 0) {
                server.setPassword(URLDecoder.decode(userInfo.substring(colon + 1), StandardCharsets.UTF_8));
            }
            if (!user.isEmpty()) {
                server.setUsername(URLDecoder.decode(user, StandardCharsets.UTF_8));
            }
        }
        return server;
    }

    private static List<String> alsoUrls(String[] args) {
        List<String> urls = new ArrayList<>();
        for (int i = 1; i + 1 < args.length; i++) {
            if (args[i].equals("--also")) {
                urls.add(args[++i]);
            }
        }
        return urls;
    }

    private void serve(BufferedReader in) throws IOException {
        String line;
        while ((line = in.readLine()) != null) {
            if (line.isBlank()) {
                continue;
            }
            String[] f = line.split(" ");
            if (f.length < 5) {
                reply(f[0] + " err java.lang.IllegalArgumentException expected ID THREAD OP KIND NAME [ARG ...]");
                continue;
            }
            Request r;
            try {
                r = new Request(f[0], f[1], f[2], f[3], f[4], Arrays.copyOfRange(f, 5, f.length));
            } catch (RuntimeException e) {
                reply(f[0] + " err " + e.getClass().getName() + " " + oneLine(e.getMessage()));
                continue;
            }
            if (r.op.equals("exit")) {
                reply(r.id + " ok");
                return;
            }
            try {
                executor(r.thread).execute(() -> run(r));
            } catch (RuntimeException e) {
                reply(r.id + " err " + e.getClass().getName() + " " + oneLine(e.getMessage()));
            }
        }
    }

    private ExecutorService executor(String thread) {
        if (thread.equals("-")) {
            return unthreaded;
        }
        if (!thread.matches("[A-Za-z0-9_.:-]+")) {
            throw new IllegalArgumentException("bad thread name " + thread);
        }
        return threads.computeIfAbsent(thread, t -> Executors.newSingleThreadExecutor(daemon("java-" + t)));
    }

    private void run(Request r) {
        String answer;
        try {
            answer = r.id + " ok" + format(execute(r));
        } catch (Throwable e) {
            Throwable cause = unwrap(e);
            answer = r.id + " err " + cause.getClass().getName() + " " + oneLine(cause.getMessage());
        }
        reply(answer);
    }

    private static String format(Object value) {
        if (value == VOID) {
            return "";
        }
        return " " + (value == null ? "null" : value.toString());
    }

    private static final Object VOID = new Object();

    private Object execute(Request r) throws Exception {
        switch (r.op) {
            case "ping":
                return "pong";
            case "clientId":
                return redisson.getId();
            case "threadId":
                return Thread.currentThread().getId();
            default:
                break;
        }
        if (r.thread.equals("-")) {
            throw new IllegalArgumentException(r.op + " needs a thread");
        }
        switch (r.kind) {
            case "semaphore":
                return semaphore(r);
            case "pes":
                return permits(r);
            case "latch":
                return latch(r);
            default:
                break;
        }
        RLock lock = lock(r.kind, r.name);
        long[] a = r.longs();
        switch (r.op) {
            case "lock":
                if (a.length == 0) {
                    lock.lock();
                } else {
                    lock.lock(a[0], TimeUnit.MILLISECONDS);
                }
                return VOID;
            case "lockInterruptibly":
                if (a.length == 0) {
                    lock.lockInterruptibly();
                } else {
                    lock.lockInterruptibly(a[0], TimeUnit.MILLISECONDS);
                }
                return VOID;
            case "tryLock":
                return switch (a.length) {
                    case 0 -> lock.tryLock();
                    case 1 -> lock.tryLock(a[0], TimeUnit.MILLISECONDS);
                    default -> lock.tryLock(a[0], a[1], TimeUnit.MILLISECONDS);
                };
            case "unlock":
                lock.unlock();
                return VOID;
            case "forceUnlock":
                return lock.forceUnlock();
            case "isLocked":
                return lock.isLocked();
            case "isHeldByCurrentThread":
                return lock.isHeldByCurrentThread();
            case "getHoldCount":
                return lock.getHoldCount();
            case "remainTimeToLive":
                return lock.remainTimeToLive();
            case "lockAndGetToken":
                return a.length == 0 ? fenced(lock).lockAndGetToken()
                        : fenced(lock).lockAndGetToken(a[0], TimeUnit.MILLISECONDS);
            case "tryLockAndGetToken":
                return switch (a.length) {
                    case 0 -> fenced(lock).tryLockAndGetToken();
                    case 1 -> fenced(lock).tryLockAndGetToken(a[0], TimeUnit.MILLISECONDS);
                    default -> fenced(lock).tryLockAndGetToken(a[0], a[1], TimeUnit.MILLISECONDS);
                };
            case "getToken":
                return fenced(lock).getToken();
            default:
                throw new IllegalArgumentException("unknown op " + r.op);
        }
    }

    private Object semaphore(Request r) throws Exception {
        RSemaphore s = (RSemaphore) family.computeIfAbsent("semaphore " + r.name,
                k -> redisson.getSemaphore(r.name));
        long[] a = r.longs();
        int n = a.length > 0 ? Math.toIntExact(a[0]) : 1;
        switch (r.op) {
            case "trySetPermits":
                return s.trySetPermits(n);
            case "addPermits":
                s.addPermits(n);
                return VOID;
            case "acquire":
                s.acquire(n);
                return VOID;
            case "tryAcquire":
                return a.length < 2 ? s.tryAcquire(n) : s.tryAcquire(n, Duration.ofMillis(a[1]));
            case "release":
                s.release(n);
                return VOID;
            case "availablePermits":
                return s.availablePermits();
            case "drainPermits":
                return s.drainPermits();
            case "cycle":
                RAtomicLong inside = redisson.getAtomicLong(r.name + ":inside");
                long most = 0;
                for (int i = 0; i < n; i++) {
                    s.acquire();
                    most = Math.max(most, inside.incrementAndGet());
                    Thread.sleep(a[1]);
                    inside.decrementAndGet();
                    s.release();
                }
                return most;
            default:
                throw new IllegalArgumentException("unknown semaphore op " + r.op);
        }
    }

    private Object permits(Request r) throws Exception {
        RPermitExpirableSemaphore s = (RPermitExpirableSemaphore) family.computeIfAbsent(
                "pes " + r.name, k -> redisson.getPermitExpirableSemaphore(r.name));
        switch (r.op) {
            case "trySetPermits":
                return s.trySetPermits(Math.toIntExact(r.longs()[0]));
            case "acquire":
                return "id:" + (r.raw.length == 0 ? s.acquire()
                        : s.acquire(r.longs()[0], TimeUnit.MILLISECONDS));
            case "tryAcquire": {
                long[] a = r.longs();
                String id = a.length < 2 ? s.tryAcquire(a[0], TimeUnit.MILLISECONDS)
                        : s.tryAcquire(a[0], a[1], TimeUnit.MILLISECONDS);
                return id == null ? null : "id:" + id;
            }
            case "release":
                s.release(r.raw[0]);
                return VOID;
            case "tryRelease":
                return s.tryRelease(r.raw[0]);
            case "updateLeaseTime":
                return s.updateLeaseTime(r.raw[0], Long.parseLong(r.raw[1]), TimeUnit.MILLISECONDS);
            case "availablePermits":
                return s.availablePermits();
            default:
                throw new IllegalArgumentException("unknown pes op " + r.op);
        }
    }

    private Object latch(Request r) throws Exception {
        RCountDownLatch l = (RCountDownLatch) family.computeIfAbsent("latch " + r.name,
                k -> redisson.getCountDownLatch(r.name));
        long[] a = r.longs();
        switch (r.op) {
            case "trySetCount":
                return l.trySetCount(a[0]);
            case "countDown":
                l.countDown();
                return VOID;
            case "getCount":
                return l.getCount();
            case "await":
                if (a.length == 0) {
                    l.await();
                    return VOID;
                }
                return l.await(a[0], TimeUnit.MILLISECONDS);
            default:
                throw new IllegalArgumentException("unknown latch op " + r.op);
        }
    }

    private static RFencedLock fenced(RLock lock) {
        if (!(lock instanceof RFencedLock)) {
            throw new IllegalArgumentException("not a fenced lock");
        }
        return (RFencedLock) lock;
    }

    private RLock lock(String kind, String name) {
        return locks.computeIfAbsent(kind + " " + name, k -> switch (kind) {
            case "lock" -> redisson.getLock(name);
            case "fair" -> redisson.getFairLock(name);
            case "fenced" -> redisson.getFencedLock(name);
            case "read" -> redisson.getReadWriteLock(name).readLock();
            case "write" -> redisson.getReadWriteLock(name).writeLock();
            case "multi" -> new RedissonMultiLock(Arrays.stream(name.split(","))
                    .map(redisson::getLock).toArray(RLock[]::new));
            case "red" -> {
                List<RLock> all = new ArrayList<>();
                all.add(redisson.getLock(name));
                for (RedissonClient other : others) {
                    all.add(other.getLock(name));
                }
                yield new RedissonRedLock(all.toArray(new RLock[0]));
            }
            default -> throw new IllegalArgumentException("unknown lock kind " + kind);
        });
    }

    private synchronized void reply(String line) {
        out.print(line);
        out.print('\n');
        out.flush();
    }

    private void shutdown() {
        for (ExecutorService e : threads.values()) {
            e.shutdownNow();
        }
        unthreaded.shutdownNow();
        redisson.shutdown(0, 2, TimeUnit.SECONDS);
        for (RedissonClient other : others) {
            other.shutdown(0, 2, TimeUnit.SECONDS);
        }
    }

    private static java.util.concurrent.ThreadFactory daemon(String name) {
        return runnable -> {
            Thread t = new Thread(runnable, name);
            t.setDaemon(true);
            return t;
        };
    }

    private static Throwable unwrap(Throwable e) {
        while ((e instanceof ExecutionException || e instanceof CompletionException) && e.getCause() != null) {
            e = e.getCause();
        }
        return e;
    }

    private static String oneLine(String message) {
        return message == null ? "" : message.replace('\r', ' ').replace('\n', ' ');
    }

    private static String hexToText(String hex) {
        if (hex.length() % 2 != 0) {
            throw new IllegalArgumentException("odd-length hex name " + hex);
        }
        byte[] bytes = new byte[hex.length() / 2];
        for (int i = 0; i < bytes.length; i++) {
            bytes[i] = (byte) Integer.parseInt(hex.substring(2 * i, 2 * i + 2), 16);
        }
        return new String(bytes, StandardCharsets.UTF_8);
    }

    private static final class Request {
        final String id;
        final String thread;
        final String op;
        final String kind;
        final String name;
        final String[] raw;

        Request(String id, String thread, String op, String kind, String name, String[] args) {
            this.id = id;
            this.thread = thread;
            this.op = op;
            this.kind = kind;
            this.name = name.equals("-") ? null : hexToText(name);
            this.raw = args;
        }

        /** The arguments as numbers (every op but the pes ops that take a permit id). */
        long[] longs() {
            return Arrays.stream(raw).mapToLong(Long::parseLong).toArray();
        }
    }
}
