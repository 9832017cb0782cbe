package io.tenplex.server;

import io.netty.buffer.ByteBufAllocator;
import io.netty.util.ResourceLeakDetector;
import io.netty.util.ResourceLeakDetectorFactory;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import org.junit.platform.launcher.LauncherSession;
import org.junit.platform.launcher.LauncherSessionListener;

/**
 * Makes Netty buffer leaks fail tests: installed before any buffer class loads (a JUnit launcher
 * session listener), it records every leak Netty's paranoid detector reports; {@link #assertNone()}
 * collects garbage, lets the detector look, and fails on any record.
 */
public final class NettyLeaks implements LauncherSessionListener {
    private static final List<String> LEAKS = new CopyOnWriteArrayList<>();

    @Override
    public void launcherSessionOpened(LauncherSession session) {
        ResourceLeakDetector.setLevel(ResourceLeakDetector.Level.PARANOID);
        ResourceLeakDetectorFactory.setResourceLeakDetectorFactory(new ResourceLeakDetectorFactory() {
            @Override
            @SuppressWarnings("deprecation")
            public <T> ResourceLeakDetector<T> newResourceLeakDetector(Class<T> resource, int samplingInterval,
                    long maxActive) {
                return new ResourceLeakDetector<T>(resource, samplingInterval) {
                    @Override
                    protected void reportTracedLeak(String resourceType, String records) {
                        LEAKS.add(resourceType + records);
                        super.reportTracedLeak(resourceType, records);
                    }

                    @Override
                    protected void reportUntracedLeak(String resourceType) {
                        LEAKS.add(resourceType);
                        super.reportUntracedLeak(resourceType);
                    }
                };
            }
        });
    }

    /** Fails when Netty has reported a leaked buffer since the session started. */
    public static void assertNone() {
        for (int i = 0; i < 3; i++) {
            System.gc();
            System.runFinalization();
            ByteBufAllocator.DEFAULT.directBuffer(8).release(); // the detector checks on allocation
            ByteBufAllocator.DEFAULT.heapBuffer(8).release();
        }
        if (!LEAKS.isEmpty()) {
            throw new AssertionError("Netty reported " + LEAKS.size() + " leaked buffers:\n" + LEAKS.get(0));
        }
    }
}
