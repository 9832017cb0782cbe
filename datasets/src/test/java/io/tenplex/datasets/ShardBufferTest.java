package io.tenplex.datasets;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.tenplex.store.StoreException;
import io.tenplex.store.memory.Allocator;
import java.nio.ByteBuffer;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;

class ShardBufferTest {
    private static void awaitWaiting(Thread t) {
        while (t.getState() != Thread.State.WAITING) {
            Thread.onSpinWait(); // observing the reader's state, not timing it
        }
    }

    @Test
    void aReadWaitsForEverySampleItTouches_andSeesTheirBytes() throws Exception {
        try (Allocator alloc = new Allocator(1 << 20)) {
            ShardBuffer b = new ShardBuffer(new int[] {7, 8}, new long[] {3, 4}, alloc);
            Thread[] reader = new Thread[1];
            CompletableFuture<byte[]> read = CompletableFuture.supplyAsync(() -> {
                reader[0] = Thread.currentThread();
                ByteBuffer dst = ByteBuffer.allocate(5);
                try {
                    b.read(2, dst);
                } catch (InterruptedException e) {
                    throw new IllegalStateException(e);
                }
                return dst.array();
            });
            while (reader[0] == null) {
                Thread.onSpinWait();
            }
            awaitWaiting(reader[0]);
            b.fill(1, ByteBuffer.wrap(new byte[] {4, 5, 6, 7}));
            awaitWaiting(reader[0]);
            assertFalse(read.isDone());
            b.fill(0, ByteBuffer.wrap(new byte[] {1, 2, 3}));
            assertArrayEquals(new byte[] {3, 4, 5, 6, 7}, read.get(10, TimeUnit.SECONDS));
            b.close();
            assertEquals(0, alloc.usedBytes());
        }
    }

    @Test
    void close_wakesWaitingReadersWithAnError_andLaterFillsAreIgnored() throws Exception {
        try (Allocator alloc = new Allocator(1 << 20)) {
            ShardBuffer b = new ShardBuffer(new int[] {1}, new long[] {8}, alloc);
            Thread[] reader = new Thread[1];
            CompletableFuture<Void> read = CompletableFuture.runAsync(() -> {
                reader[0] = Thread.currentThread();
                try {
                    b.read(0, ByteBuffer.allocate(8));
                } catch (InterruptedException e) {
                    throw new IllegalStateException(e);
                }
            });
            while (reader[0] == null) {
                Thread.onSpinWait();
            }
            awaitWaiting(reader[0]);
            b.close();
            ExecutionException e = org.junit.jupiter.api.Assertions.assertThrows(ExecutionException.class,
                    () -> read.get(10, TimeUnit.SECONDS));
            assertTrue(e.getCause().getMessage().contains("closed"), e.getCause().toString());
            assertEquals(0, alloc.usedBytes());
            b.fill(0, ByteBuffer.allocate(8)); // a loader finishing late: no write to freed memory
            assertFalse(b.copySample(0, ByteBuffer.allocate(8)));
        }
    }

    @Test
    void aSampleGivenUp_failsTheReadsWaitingForIt_andLaterOnes_notReadsOfOthers() throws Exception {
        try (Allocator alloc = new Allocator(1 << 20)) {
            ShardBuffer b = new ShardBuffer(new int[] {1, 2}, new long[] {4, 4}, alloc);
            Thread[] reader = new Thread[1];
            CompletableFuture<Void> read = CompletableFuture.runAsync(() -> {
                reader[0] = Thread.currentThread();
                try {
                    b.read(0, ByteBuffer.allocate(8));
                } catch (InterruptedException e) {
                    throw new IllegalStateException(e);
                }
            });
            while (reader[0] == null) {
                Thread.onSpinWait();
            }
            awaitWaiting(reader[0]);
            assertTrue(b.claim(1));
            b.fail(1, "sample 2 cannot be decoded");
            ExecutionException e = org.junit.jupiter.api.Assertions.assertThrows(ExecutionException.class,
                    () -> read.get(10, TimeUnit.SECONDS));
            assertEquals(StoreException.Kind.BAD_GATEWAY, ((StoreException) e.getCause()).kind());
            assertTrue(e.getCause().getMessage().contains("sample 2 cannot be decoded"), e.getCause().toString());
            org.junit.jupiter.api.Assertions.assertThrows(StoreException.class, () -> b.read(4, ByteBuffer.allocate(4)));
            b.fill(0, ByteBuffer.wrap(new byte[] {1, 2, 3, 4}));
            ByteBuffer first = ByteBuffer.allocate(4);
            b.read(0, first);
            assertArrayEquals(new byte[] {1, 2, 3, 4}, first.array());
            b.close();
        }
    }
}
