package io.tenplex.bench;

import com.sun.management.GarbageCollectionNotificationInfo;
import java.lang.management.GarbageCollectorMXBean;
import java.lang.management.ManagementFactory;
import java.lang.management.MemoryType;
import java.util.concurrent.atomic.AtomicLong;
import javax.management.NotificationEmitter;
import javax.management.openmbean.CompositeData;

/**
 * The heap in use right after each garbage collection, at its highest so far: an upper bound of what a
 * run held at once (young collections leave old garbage in place), read from the collectors' notifications.
 */
final class HeapWatch {
    private final AtomicLong highest = new AtomicLong();
    private final AtomicLong collections = new AtomicLong();

    private HeapWatch() {
    }

    static HeapWatch start() {
        HeapWatch w = new HeapWatch();
        java.util.Set<String> heap = new java.util.HashSet<>();
        ManagementFactory.getMemoryPoolMXBeans().stream().filter(p -> p.getType() == MemoryType.HEAP)
                .forEach(p -> heap.add(p.getName()));
        for (GarbageCollectorMXBean gc : ManagementFactory.getGarbageCollectorMXBeans()) {
            ((NotificationEmitter) gc).addNotificationListener((n, handback) -> {
                if (n.getType().equals(GarbageCollectionNotificationInfo.GARBAGE_COLLECTION_NOTIFICATION)) {
                    GarbageCollectionNotificationInfo info = GarbageCollectionNotificationInfo
                            .from((CompositeData) n.getUserData());
                    long used = info.getGcInfo().getMemoryUsageAfterGc().entrySet().stream()
                            .filter(e -> heap.contains(e.getKey())).mapToLong(e -> e.getValue().getUsed()).sum();
                    w.collections.incrementAndGet();
                    w.highest.accumulateAndGet(used, Math::max);
                }
            }, null, null);
        }
        return w;
    }

    /** Bytes in use after the collection that left the most (the heap's pools). */
    long highestAfterGc() {
        return highest.get();
    }

    long collections() {
        return collections.get();
    }
}
