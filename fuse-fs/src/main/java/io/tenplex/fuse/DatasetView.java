package io.tenplex.fuse;

import io.tenplex.store.JobNamespace;
import io.tenplex.datasets.DatasetService;
import io.tenplex.datasets.ViewNode;
import io.tenplex.store.StorePath;
import java.util.List;
import java.util.regex.Pattern;

/**
 * Which paths of the mount are read-only (saved generations, dataset views) and what the dataset
 * mounts add to the tree: their rank views under {@code /job/<job>/}, and the job directories that
 * only a view makes.
 */
final class DatasetView {
    private static final Pattern READ_ONLY = Pattern.compile("^" + JobNamespace.ROOT + "/[^/]+/generation(s(/.*)?)?$");
    private static final Pattern JOB_DIR = Pattern.compile("^" + JobNamespace.ROOT + "(/[^/]+)?$|^/$");

    private final DatasetService datasets; // null: no dataset views

    DatasetView(DatasetService datasets) {
        this.datasets = datasets;
    }

    static boolean isGeneration(String p) {
        return READ_ONLY.matcher(p).matches();
    }

    static boolean isJobDir(String p) {
        return JOB_DIR.matcher(p).matches();
    }

    /**
     * EROFS for a saved generation (or the file naming the current one) or a path in (or directly
     * under) a dataset view.
     */
    void checkWritable(String p) {
        if (isGeneration(p)) {
            throw new FsLogic.FsError(FsLogic.EROFS, p + " is a saved generation (read-only)");
        }
        if (datasets != null && !isJobDir(p)) {
            StorePath sp = FsLogic.path(p);
            if (datasets.isViewPath(p) || (!sp.isRoot() && datasets.isViewPath(sp.parent().toString()))) {
                throw new FsLogic.FsError(FsLogic.EROFS, p + " is in a dataset view (read-only)");
            }
        }
    }

    /** The dataset view entry at {@code p}, or null. */
    ViewNode lookup(String p) {
        return datasets == null ? null : datasets.lookup(p).orElse(null);
    }

    /** True when {@code dir} ({@code /} or {@code /job}) holds job directories that views make. */
    boolean mountedJobsUnder(String dir) {
        return datasets != null && !datasets.jobs().isEmpty() && (dir.equals("/") || dir.equals("/job"));
    }

    /** Names a view adds to the directory {@code n} (whose view entry is {@code v}, or null). */
    List<String> extraNames(String n, ViewNode v) {
        return v != null ? v.children()
                : n.equals("/job") && datasets != null ? datasets.jobs()
                : n.equals("/") && mountedJobsUnder("/") ? List.of("job") : List.of();
    }
}
