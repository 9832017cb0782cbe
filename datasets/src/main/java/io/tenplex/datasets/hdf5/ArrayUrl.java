package io.tenplex.datasets.hdf5;

/**
 * The URL of an array source: {@code hdf5:///<file>#<dataset>} (an HDF5 dataset by its path, e.g.
 * {@code /group/x}) or {@code netcdf:///<file>#<variable>} (a NetCDF-4 variable by name, in a group
 * as {@code group/name}) or {@code adios2:///<dir.bp>#<variable>} (an ADIOS2 BP4 or BP5 variable by
 * name). The file is an absolute path ({@code hdf5:/<file>} without the slashes is read the same);
 * it is not percent-decoded. Immutable.
 *
 * @param kind {@code hdf5}, {@code netcdf} or {@code adios2}
 * @param file the absolute path of the file, as given
 * @param dataset the HDF5 path of the dataset (for a variable: {@code /} and its name)
 */
public record ArrayUrl(String kind, String file, String dataset) {
    static final String HDF5 = "hdf5";
    static final String NETCDF = "netcdf";
    static final String ADIOS2 = "adios2";

    /** True if {@code url} names an array source (whether or not it is well formed). */
    public static boolean handles(String url) {
        return url.startsWith(HDF5 + ":") || url.startsWith(NETCDF + ":") || url.startsWith(ADIOS2 + ":");
    }

    /**
     * Parses an array source URL.
     *
     * @throws IllegalArgumentException naming the URL and the form expected
     */
    public static ArrayUrl parse(String url) {
        int colon = url.indexOf(':');
        String kind = colon < 0 ? "" : url.substring(0, colon);
        int hash = url.indexOf('#');
        if (!(HDF5.equals(kind) || NETCDF.equals(kind) || ADIOS2.equals(kind)) || hash < 0 || hash == url.length() - 1) {
            throw bad(url);
        }
        String file = url.substring(colon + 1, hash);
        if (file.startsWith("//")) {
            file = file.substring(2);
        }
        String name = url.substring(hash + 1);
        if (!file.startsWith("/") || file.length() < 2 || name.contains("#")) {
            throw bad(url);
        }
        String dataset = name.startsWith("/") ? name : "/" + name;
        if (dataset.contains("//") || dataset.equals("/")) {
            throw bad(url);
        }
        return new ArrayUrl(kind, file, dataset);
    }

    private static IllegalArgumentException bad(String url) {
        return new IllegalArgumentException("array source '" + url + "' is not hdf5:///<file>#<dataset> or "
                + "netcdf:///<file>#<variable> or adios2:///<dir.bp>#<variable> (an absolute file path)");
    }

    /** What the dataset is called in messages: {@code dataset /x} or {@code variable x}. */
    String what() {
        return (byName() ? "variable " + dataset.substring(1) : "dataset " + dataset) + " of " + file;
    }

    /** The canonical form, {@code kind:///file#dataset}. */
    @Override
    public String toString() {
        return kind + "://" + file + "#" + (byName() ? dataset.substring(1) : dataset);
    }

    /** True for the kinds whose arrays are named by variable, not by HDF5 path. */
    private boolean byName() {
        return NETCDF.equals(kind) || ADIOS2.equals(kind);
    }
}
