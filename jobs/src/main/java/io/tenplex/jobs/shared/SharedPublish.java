package io.tenplex.jobs.shared;

import io.tenplex.store.StorePath;
import io.tenplex.store.TensorStore;
import io.tenplex.store.memory.Blob;
import io.tenplex.store.memory.BlobWriter;
import io.tenplex.store.memory.BlockChecksums;
import io.tenplex.store.memory.SharedSegment;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionException;
import java.util.concurrent.ExecutorService;

/**
 * Publishes a filled reservation under a staging path in one atomic batch: each tensor a blob over
 * its bytes in the segment (no copy), checksummed in parallel, plus the small files the client sent.
 */
final class SharedPublish {
    private final TensorStore store;
    private final ExecutorService work;

    SharedPublish(TensorStore store, ExecutorService work) {
        this.store = store;
        this.work = work;
    }

    /**
     * @param order every entry's path (tensors and files) in the order the tree lists them, as the
     *     client's state had them; null: tensors first, then files
     */
    void publish(StorePath staging, SharedSegment segment, List<SharedSaves.Wanted> wanted,
            List<SharedSaves.Placed> placed, Map<String, byte[]> files, List<String> order) throws IOException {
        List<TensorStore.Put> puts = new ArrayList<>(wanted.size() + files.size());
        try {
            for (int i = 0; i < wanted.size(); i++) {
                SharedSaves.Placed p = placed.get(i);
                Blob blob = segment.blob(store.allocator(), p.offset(), p.size());
                TensorStore.Put put = wanted.get(i).meta() == null ? TensorStore.Put.file(path(staging, p.path()), blob, null)
                        : new TensorStore.Put(path(staging, p.path()), wanted.get(i).meta(), blob, null);
                puts.add(put);
            }
            if (files.size() + wanted.size() > SharedSaves.MAX_TENSORS) {
                throw new IllegalArgumentException("more than " + SharedSaves.MAX_TENSORS + " entries in one save");
            }
            for (Map.Entry<String, byte[]> f : files.entrySet()) {
                BlobWriter w = BlobWriter.allocate(store.allocator(), f.getValue().length, store.checksumBlock());
                w.append(ByteBuffer.wrap(f.getValue()));
                puts.add(TensorStore.Put.file(path(staging, f.getKey()), w.take(), w.checksums()));
            }
            puts = ordered(checksummed(puts), staging, order);
        } catch (IOException | RuntimeException e) {
            puts.forEach(p -> p.blob().release());
            throw e;
        }
        if (puts.isEmpty()) {
            store.mkdirs(staging);
        } else {
            store.putAll(puts, false);
        }
    }

    /** The puts in {@code order} (each entry named exactly once), so the tree lists them as the client's state. */
    private static List<TensorStore.Put> ordered(List<TensorStore.Put> puts, StorePath staging, List<String> order) {
        if (order == null) {
            return puts;
        }
        Map<StorePath, TensorStore.Put> byPath = new java.util.HashMap<>();
        for (TensorStore.Put p : puts) {
            if (byPath.put(p.path(), p) != null) {
                throw new IllegalArgumentException(p.path() + " is given twice (as a tensor and a file, or as two files)");
            }
        }
        List<TensorStore.Put> out = new ArrayList<>(puts.size());
        for (String rel : order) {
            TensorStore.Put p = byPath.remove(path(staging, rel));
            if (p == null) {
                throw new IllegalArgumentException("\"order\" names '" + rel + "', which is not a tensor of the "
                        + "reservation or a file of the commit (or names it twice)");
            }
            out.add(p);
        }
        if (!byPath.isEmpty()) {
            throw new IllegalArgumentException("\"order\" leaves out " + byPath.size() + " entries, e.g. "
                    + byPath.keySet().iterator().next());
        }
        return out;
    }

    private static StorePath path(StorePath staging, String rel) {
        if (rel.isEmpty() || rel.startsWith("/")) {
            throw new IllegalArgumentException("entry paths are relative to the rank's tree, got '" + rel + "'");
        }
        try {
            return staging.resolve(StorePath.parse("/" + rel));
        } catch (RuntimeException e) {
            throw new IllegalArgumentException("bad entry path '" + rel + "': " + e.getMessage());
        }
    }

    /** The puts with block checksums for the tensors' bytes, computed on {@code work}, a share each. */
    private List<TensorStore.Put> checksummed(List<TensorStore.Put> puts) {
        int block = store.checksumBlock();
        int shares = Math.max(1, Math.min(puts.size(), Runtime.getRuntime().availableProcessors()));
        BlockChecksums[] sums = new BlockChecksums[puts.size()];
        long total = puts.stream().mapToLong(p -> p.sums() == null ? p.blob().size() : 0).sum();
        List<CompletableFuture<Void>> tasks = new ArrayList<>();
        long acc = 0;
        int start = 0;
        int share = 1;
        for (int i = 0; i < puts.size(); i++) {
            acc += puts.get(i).sums() == null ? puts.get(i).blob().size() : 0;
            if (acc >= total * share / shares || i == puts.size() - 1) {
                int from = start;
                int end = i + 1;
                tasks.add(CompletableFuture.runAsync(() -> {
                    for (int k = from; k < end; k++) {
                        if (puts.get(k).sums() == null) {
                            sums[k] = BlockChecksums.compute(puts.get(k).blob(), block);
                        }
                    }
                }, work));
                start = end;
                share++;
            }
        }
        try {
            CompletableFuture.allOf(tasks.toArray(CompletableFuture[]::new)).join();
        } catch (CompletionException e) {
            throw e.getCause() instanceof RuntimeException r ? r : e;
        }
        List<TensorStore.Put> out = new ArrayList<>(puts.size());
        for (int i = 0; i < puts.size(); i++) {
            TensorStore.Put p = puts.get(i);
            out.add(p.sums() != null ? p : new TensorStore.Put(p.path(), p.meta(), p.blob(), sums[i]));
        }
        return out;
    }
}
