package io.tenplex.cli;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import io.tenplex.ptc.data.DatasetIndex;
import io.tenplex.datasets.format.SampleFormat;
import io.tenplex.datasets.format.SampleFormats;
import io.tenplex.store.JobNamespace;
import java.io.IOException;
import java.io.OutputStreamWriter;
import java.io.Writer;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.concurrent.Callable;
import picocli.CommandLine;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;
import picocli.CommandLine.Parameters;

/** {@code tenplex dataset}: build an index, mount a job's dataset, show its loading. */
@Command(name = "dataset", description = "Dataset indexes and mounts (see docs/DATASETS.md).",
        subcommands = {CommandLine.HelpCommand.class, DatasetCli.Index.class, DatasetCli.Mount.class, DatasetCli.Status.class})
final class DatasetCli implements Callable<Integer> {
    @Override
    public Integer call() {
        new CommandLine(this).usage(System.out);
        return 0;
    }

    @Command(name = "index", description = "Write the index of sample files (prototype text format).")
    static final class Index implements Callable<Integer> {
        @Option(names = "--format", required = true,
                description = "records:<bytes> | npy | tfrecord | lines (one sample per record, row, record, line).")
        String format;

        @Option(names = {"-o", "--output"}, description = "Index file to write (default: standard output).")
        Path output;

        @Parameters(arity = "1..*", description = "Sample files, in order.")
        List<Path> files;

        @Override
        public Integer call() throws IOException {
            SampleFormat kind = SampleFormats.parse(format);
            List<DatasetIndex.File> entries = new ArrayList<>();
            long samples = 0;
            for (Path p : files) {
                if (!Files.isRegularFile(p)) {
                    throw new IllegalArgumentException(p + " is not a readable file");
                }
                DatasetIndex.File e = SampleFormats.index(p, kind);
                entries.add(e);
                samples += e.samples();
            }
            DatasetIndex index = new DatasetIndex(entries);
            if (output == null) {
                Writer w = new OutputStreamWriter(System.out, StandardCharsets.UTF_8);
                index.write(w);
            } else {
                Path tmp = output.resolveSibling(output.getFileName() + ".tmp");
                try (Writer w = Files.newBufferedWriter(tmp)) {
                    index.write(w);
                }
                Files.move(tmp, output, java.nio.file.StandardCopyOption.REPLACE_EXISTING,
                        java.nio.file.StandardCopyOption.ATOMIC_MOVE);
                System.err.println("wrote " + output + ": " + files.size() + " files, " + samples + " samples");
            }
            return 0;
        }
    }

    @Command(name = "mount", description = "Mount (or remount at a new progress or data-parallel size) a job's dataset.")
    static final class Mount implements Callable<Integer> {
        @CommandLine.Mixin
        TenplexCli.Target t;

        @Option(names = "--job", required = true, description = "Job name.")
        String job;

        @Option(names = "--index", required = true,
                description = "Index file: a path below one of the daemon's --data-root directories, or a URL on one "
                        + "of its --allow-source-host hosts.")
        String index;

        @Option(names = "--global-batch", required = true, description = "Global batch size G.")
        int globalBatch;

        @Option(names = "--dp", required = true, description = "Data-parallel size N.")
        int dp;

        @Option(names = "--progress", defaultValue = "0", description = "Samples consumed, step x G (default: 0).")
        long progress;

        @Option(names = "--seed", defaultValue = "0", description = "Seed of the order (default: 0).")
        long seed;

        @Option(names = "--no-shuffle", description = "Keep the index order.")
        boolean noShuffle;

        @Option(names = "--samples-per-file", defaultValue = "1024", description = "Samples per shard file (default: 1024).")
        int perFile;

        @Option(names = "--ranks", split = ",", description = "Ranks served by this daemon (default: all).")
        List<Integer> ranks;

        @Override
        public Integer call() throws Exception {
            String where = index.contains("://") ? index : Path.of(index).toAbsolutePath().toString();
            ObjectNode req = TenplexCli.JSON.createObjectNode().put("index", where).put("globalBatch", globalBatch)
                    .put("dpSize", dp).put("progress", progress).put("seed", seed).put("shuffle", !noShuffle)
                    .put("samplesPerFile", perFile);
            if (ranks != null) {
                ranks.forEach(req.putArray("ranks")::add);
            }
            JsonNode m = t.post("/api/v1/datasets" + TenplexCli.encode("/" + JobNamespace.requireValidName(job)) + "/mount", req.toString());
            System.out.printf(Locale.ROOT, "mounted %s: epoch %d, %d batches of %d (%d samples dropped), local batches %s%n",
                    job, m.path("epoch").asInt(), m.path("batches").asInt(), globalBatch, m.path("dropped").asInt(),
                    m.path("localBatch"));
            System.out.println("  " + m.path("head").asText());
            return 0;
        }
    }

    @Command(name = "status", description = "A job's dataset mount and its loading.")
    static final class Status implements Callable<Integer> {
        @CommandLine.Mixin
        TenplexCli.Target t;

        @Option(names = "--job", required = true, description = "Job name.")
        String job;

        @Override
        public Integer call() throws Exception {
            JsonNode m = t.get("/api/v1/datasets" + TenplexCli.encode("/" + JobNamespace.requireValidName(job)));
            JsonNode l = m.path("load");
            System.out.printf(Locale.ROOT, "%s: progress %d, G %d, N %d, %d batches; %s %s (%d/%d samples)%n", job,
                    m.path("progress").asLong(), m.path("globalBatch").asInt(), m.path("dpSize").asInt(),
                    m.path("batches").asInt(), l.path("state").asText(),
                    Progress.bar(l.path("bytesLoaded").asLong(), l.path("bytesTotal").asLong()),
                    l.path("samplesLoaded").asLong(), l.path("samplesTotal").asLong());
            JsonNode first = l.path("firstBatchReadyMillis");
            System.out.printf(Locale.ROOT, "  from previous mount %d, peers %d, source %d; first batch ready %s;"
                    + " %d reads waited %s in all%n", l.path("fromPreviousMount").asLong(), l.path("fromPeers").asLong(),
                    l.path("fromSource").asLong(), first.isNumber() ? "after " + Human.millis(first.asDouble()) : "not yet",
                    l.path("readsThatWaited").asLong(), Human.millis(l.path("readWaitMillis").asDouble()));
            if (l.has("error")) {
                System.out.println("  " + l.path("error").asText());
            }
            return 0;
        }
    }
}
