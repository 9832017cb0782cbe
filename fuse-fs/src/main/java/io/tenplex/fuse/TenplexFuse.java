package io.tenplex.fuse;

import io.tenplex.store.TensorStore;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.function.IntSupplier;
import jnr.ffi.Pointer;
import jnr.ffi.types.mode_t;
import jnr.ffi.types.off_t;
import jnr.ffi.types.size_t;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import ru.serce.jnrfuse.FuseFillDir;
import ru.serce.jnrfuse.FuseStubFS;
import ru.serce.jnrfuse.struct.FileStat;
import ru.serce.jnrfuse.struct.FuseFileInfo;
import ru.serce.jnrfuse.struct.Timespec;

/**
 * The jnr-fuse adapter over {@link FsLogic}: every callback goes through {@link #call}, which turns
 * {@link FsLogic.FsError} into its errno and anything else into EIO with a log line (jnr-fuse would
 * otherwise swallow it and answer 0). Mounted single-threaded ({@code -s}: jnr-fuse's multi-threaded
 * mode re-attaches native threads on every request) with {@code big_writes}.
 */
public final class TenplexFuse extends FuseStubFS implements AutoCloseable {
    private static final Logger LOG = LoggerFactory.getLogger(TenplexFuse.class);
    private static final int MAX_REQUEST = 1 << 20;

    private static final com.kenai.jffi.MemoryIO NATIVE = com.kenai.jffi.MemoryIO.getInstance();

    private final FsLogic fs;
    private final ThreadLocal<byte[]> buffers = ThreadLocal.withInitial(() -> new byte[MAX_REQUEST]);
    private final long uid;
    private final long gid;
    private Path mountedAt;

    public TenplexFuse(TensorStore store) {
        this(store, null);
    }

    /** @param datasets dataset mounts shown read-only under {@code /job/<job>/}, or null */
    public TenplexFuse(TensorStore store, io.tenplex.datasets.DatasetService datasets) {
        this.fs = new FsLogic(store, datasets);
        this.uid = id("-u");
        this.gid = id("-g");
    }

    public FsLogic logic() {
        return fs;
    }

    private static long id(String flag) {
        try {
            Process p = new ProcessBuilder("id", flag).redirectErrorStream(true).start();
            String out = new String(p.getInputStream().readAllBytes(), StandardCharsets.US_ASCII).strip();
            return p.waitFor() == 0 ? Long.parseLong(out) : 0;
        } catch (IOException | NumberFormatException e) {
            return 0;
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            return 0;
        }
    }

    /** Runs one callback: its errno as a negative number, or its result. */
    private static int call(String op, String path, IntSupplier body) {
        long t = System.nanoTime();
        try {
            return FuseMetrics.record(op, body.getAsInt(), System.nanoTime() - t);
        } catch (FsLogic.FsError e) {
            return FuseMetrics.record(op, -e.errno(), System.nanoTime() - t);
        } catch (Throwable e) {
            LOG.warn("fuse {} {} failed", op, path, e);
            return FuseMetrics.record(op, -FsLogic.EIO, System.nanoTime() - t);
        }
    }

    @Override
    public int getattr(String path, FileStat stat) {
        return call("getattr", path, () -> {
            FsLogic.Attr a = fs.getattr(path);
            stat.st_mode.set(a.dir() ? FileStat.S_IFDIR | (a.writable() ? 0755 : 0555)
                    : FileStat.S_IFREG | (a.writable() ? 0644 : 0444));
            stat.st_size.set(a.size());
            stat.st_nlink.set(a.dir() ? 2 : 1);
            stat.st_uid.set(uid);
            stat.st_gid.set(gid);
            for (var t : List.of(stat.st_mtim, stat.st_ctim, stat.st_atim)) { // when it was written, not 1970
                t.tv_sec.set(a.mtimeMillis() / 1000);
                t.tv_nsec.set(a.mtimeMillis() % 1000 * 1_000_000);
            }
            return 0;
        });
    }

    @Override
    public int readdir(String path, Pointer buf, FuseFillDir filter, @off_t long offset, FuseFileInfo fi) {
        return call("readdir", path, () -> {
            List<String> names = new ArrayList<>(List.of(".", ".."));
            names.addAll(fs.readdir(path));
            for (String n : names) {
                if (filter.apply(buf, n, null, 0) != 0) {
                    break;
                }
            }
            return 0;
        });
    }

    @Override
    public int open(String path, FuseFileInfo fi) {
        return call("open", path, () -> {
            int flags = fi.flags.intValue();
            int access = flags & 3; // O_RDONLY 0, O_WRONLY 1, O_RDWR 2
            boolean truncate = (flags & 01000) != 0; // O_TRUNC
            long fh = fs.open(path, access != 0, truncate);
            fi.fh.set(fh);
            if (fs.readToEnd(fh)) {
                directIo(fi);
            }
            return 0;
        });
    }

    /**
     * Sets {@code direct_io} in libfuse 2.9's {@code fuse_file_info}: bit 0 of the int at offset 20 (jnr-fuse's
     * own field for it is read-only and at the wrong offset). Reads then go to the handle until its end.
     */
    private static void directIo(FuseFileInfo fi) {
        Pointer m = jnr.ffi.Struct.getMemory(fi);
        m.putInt(20, m.getInt(20) | 1);
    }

    @Override
    public int create(String path, @mode_t long mode, FuseFileInfo fi) {
        return call("create", path, () -> {
            fi.fh.set(fs.create(path));
            return 0;
        });
    }

    @Override
    public int read(String path, Pointer buf, @size_t long size, @off_t long offset, FuseFileInfo fi) {
        return call("read", path, () -> {
            // the kernel's buffer seen as a direct ByteBuffer: the store copies into it once (memcpy),
            // with no heap array in between (Pointer.put from a heap array would be a second copy)
            ByteBuffer dst = NATIVE.newDirectByteBuffer(buf.address(), (int) size);
            return fs.read(fi.fh.get(), offset, dst);
        });
    }

    @Override
    public int write(String path, Pointer buf, @size_t long size, @off_t long offset, FuseFileInfo fi) {
        return call("write", path, () -> {
            byte[] b = buffer(size);
            buf.get(0, b, 0, (int) size);
            return fs.write(fi.fh.get(), offset, ByteBuffer.wrap(b, 0, (int) size));
        });
    }

    private byte[] buffer(long size) {
        byte[] b = buffers.get();
        if (b.length < size) {
            b = new byte[(int) size];
            buffers.set(b);
        }
        return b;
    }

    @Override
    public int truncate(String path, @off_t long size) {
        return call("truncate", path, () -> {
            fs.truncate(path, size);
            return 0;
        });
    }

    @Override
    public int ftruncate(String path, @off_t long size, FuseFileInfo fi) {
        return call("ftruncate", path, () -> {
            fs.ftruncate(fi.fh.get(), size);
            return 0;
        });
    }

    @Override
    public int release(String path, FuseFileInfo fi) {
        return call("release", path, () -> {
            fs.release(fi.fh.get());
            return 0;
        });
    }

    @Override
    public int flush(String path, FuseFileInfo fi) {
        return call("flush", path, () -> {
            fs.flush(fi.fh.get()); // publishes a file's bytes so that close() sees a failure
            return 0;
        });
    }

    @Override
    public int fsync(String path, int isdatasync, FuseFileInfo fi) {
        return 0;
    }

    @Override
    public int mkdir(String path, @mode_t long mode) {
        return call("mkdir", path, () -> {
            fs.mkdir(path);
            return 0;
        });
    }

    @Override
    public int rmdir(String path) {
        return call("rmdir", path, () -> {
            fs.rmdir(path);
            return 0;
        });
    }

    @Override
    public int unlink(String path) {
        return call("unlink", path, () -> {
            fs.unlink(path);
            return 0;
        });
    }

    @Override
    public int rename(String oldpath, String newpath) {
        return call("rename", oldpath, () -> {
            fs.rename(oldpath, newpath);
            return 0;
        });
    }

    @Override
    public int chmod(String path, @mode_t long mode) {
        return call("chmod", path, () -> {
            fs.getattr(path); // modes are fixed by the entry's kind; succeed on entries that exist
            return 0;
        });
    }

    @Override
    public int utimens(String path, Timespec[] timespec) {
        return call("utimens", path, () -> {
            fs.getattr(path); // times are not kept
            return 0;
        });
    }

    /**
     * Mounts at {@code dir} (created if missing). A stale mount left by a daemon that died is
     * unmounted first; a live one is refused.
     */
    public void mountAt(Path dir) throws IOException {
        Path abs = dir.toAbsolutePath().normalize();
        if (mounted(abs)) {
            if (!stale(abs)) {
                throw new IOException(abs + " is already a live mount; unmount it or choose another directory");
            }
            LOG.info("removing the stale mount at {}", abs);
            run("fusermount", "-u", "-z", abs.toString());
        }
        try {
            Files.createDirectories(abs);
        } catch (IOException e) {
            throw new IOException("cannot create the mount point " + abs + ": " + e, e);
        }
        mount(abs, false, false, new String[] {"-s", "-o", "big_writes", "-o", "fsname=tenplex"});
        mountedAt = abs;
        LOG.info("store mounted at {}", abs);
    }

    private static boolean mounted(Path dir) throws IOException {
        for (String line : Files.readAllLines(Path.of("/proc/self/mounts"))) {
            String[] f = line.split(" ");
            if (f.length > 1 && f[1].replace("\\040", " ").equals(dir.toString())) {
                return true;
            }
        }
        return false;
    }

    private static boolean stillMounted(Path dir) {
        try {
            return mounted(dir);
        } catch (IOException e) {
            return true;
        }
    }

    private static boolean stale(Path dir) {
        try (var s = Files.list(dir)) {
            s.findFirst();
            return false;
        } catch (IOException | java.io.UncheckedIOException e) {
            return true; // "Transport endpoint is not connected"
        }
    }

    private static void run(String... cmd) throws IOException {
        try {
            Process p = new ProcessBuilder(cmd).redirectErrorStream(true).start();
            String out = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
            if (!p.waitFor(30, TimeUnit.SECONDS) || p.exitValue() != 0) {
                throw new IOException(String.join(" ", cmd) + " failed: " + out.strip());
            }
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new IOException("interrupted: " + String.join(" ", cmd), e);
        }
    }

    /** Unmounts (lazily, so open files do not keep it). */
    @Override
    public void close() {
        if (mountedAt != null) {
            try {
                if (mounted(mountedAt)) { // jnr-fuse's own shutdown hook may have unmounted it already
                    run("fusermount", "-u", "-z", mountedAt.toString());
                }
            } catch (IOException e) {
                if (stillMounted(mountedAt)) {
                    LOG.warn("unmount of {} failed: {}", mountedAt, e.getMessage());
                    umount();
                } else { // jnr-fuse's shutdown hook unmounted it meanwhile: a clean shutdown
                    LOG.debug("{} was unmounted meanwhile: {}", mountedAt, e.getMessage());
                }
            }
            mountedAt = null;
        }
    }
}
