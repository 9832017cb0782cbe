package io.tenplex.store;

import io.tenplex.ptc.DType;
import io.tenplex.ptc.Shape;
import io.tenplex.ptc.TensorMeta;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.charset.StandardCharsets;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/** The NumPy {@code .npy} format (versions 1-3): header encoding and parsing, C order only. */
public final class Npy {
    private static final byte[] MAGIC = {(byte) 0x93, 'N', 'U', 'M', 'P', 'Y'};
    private static final Pattern DESCR = Pattern.compile("'descr'\\s*:\\s*'([^']*)'");
    private static final Pattern FORTRAN = Pattern.compile("'fortran_order'\\s*:\\s*(True|False)");
    private static final Pattern SHAPE = Pattern.compile("'shape'\\s*:\\s*\\(([^)]*)\\)");

    private Npy() {
    }

    /** A parsed header: the tensor it describes and where its data starts. */
    public record Header(TensorMeta meta, int dataOffset) {}

    /** The version 1.0 header for {@code meta}, padded so that the data starts on a 64-byte boundary. */
    public static byte[] header(TensorMeta meta) {
        StringBuilder shape = new StringBuilder("(");
        for (int i = 0; i < meta.shape().rank(); i++) {
            shape.append(meta.shape().dim(i)).append(meta.shape().rank() == 1 ? "," : i + 1 < meta.shape().rank() ? ", " : "");
        }
        shape.append(')');
        String dict = "{'descr': '" + meta.dtype().npyDescr() + "', 'fortran_order': False, 'shape': " + shape + ", }";
        int unpadded = MAGIC.length + 2 + 2 + dict.length() + 1;
        int pad = (64 - unpadded % 64) % 64;
        String text = dict + " ".repeat(pad) + "\n";
        ByteBuffer b = ByteBuffer.allocate(MAGIC.length + 4 + text.length()).order(ByteOrder.LITTLE_ENDIAN);
        b.put(MAGIC).put((byte) 1).put((byte) 0).putShort((short) text.length());
        b.put(text.getBytes(StandardCharsets.US_ASCII));
        return b.array();
    }

    /**
     * Parses a header from the first {@code n} bytes of a body.
     *
     * @return null when more bytes are needed
     * @throws IllegalArgumentException when the bytes are not a supported {@code .npy} header
     */
    public static Header parse(byte[] buf, int n) {
        if (n < 10) {
            return null;
        }
        for (int i = 0; i < MAGIC.length; i++) {
            if (buf[i] != MAGIC[i]) {
                throw new IllegalArgumentException("body is not a .npy file (bad magic)");
            }
        }
        int major = buf[6];
        ByteBuffer b = ByteBuffer.wrap(buf, 0, n).order(ByteOrder.LITTLE_ENDIAN);
        int lenBytes = major == 1 ? 2 : 4;
        if (major < 1 || major > 3) {
            throw new IllegalArgumentException("unsupported .npy version " + major);
        }
        if (n < 8 + lenBytes) {
            return null;
        }
        long hlen = lenBytes == 2 ? Short.toUnsignedInt(b.getShort(8)) : Integer.toUnsignedLong(b.getInt(8));
        if (hlen > 1 << 16) {
            throw new IllegalArgumentException(".npy header of " + hlen + " bytes is too long");
        }
        int start = 8 + lenBytes;
        if (n < start + hlen) {
            return null;
        }
        String dict = new String(buf, start, (int) hlen, major == 3 ? StandardCharsets.UTF_8 : StandardCharsets.ISO_8859_1);
        Matcher d = DESCR.matcher(dict);
        Matcher f = FORTRAN.matcher(dict);
        Matcher s = SHAPE.matcher(dict);
        if (!d.find() || !f.find() || !s.find()) {
            throw new IllegalArgumentException(".npy header lacks descr, fortran_order or shape: " + dict.trim());
        }
        if (f.group(1).equals("True")) {
            throw new IllegalArgumentException(".npy data in Fortran order is not supported (save a C-contiguous array)");
        }
        String dims = s.group(1).replace(" ", "");
        if (dims.endsWith(",")) {
            dims = dims.substring(0, dims.length() - 1);
        }
        return new Header(new TensorMeta(DType.fromNpyDescr(d.group(1)), Shape.parse(dims)), start + (int) hlen);
    }
}
