package io.tenplex.datasets.format;

import java.io.ByteArrayInputStream;
import java.nio.charset.StandardCharsets;

/** In-memory sources for the format tests. */
final class Sources {
    private Sources() {}

    static Samples find(SampleFormat f, byte[] bytes) throws Exception {
        return f.find(new ByteArrayInputStream(bytes), bytes.length, "src.bin");
    }

    static byte[] ascii(String s) {
        return s.getBytes(StandardCharsets.US_ASCII);
    }

    /** A refusal's message; fails if the source is accepted or refused otherwise. */
    static String refusal(SampleFormat f, byte[] bytes, long size) {
        return org.junit.jupiter.api.Assertions.assertThrows(IllegalArgumentException.class,
                () -> f.find(new ByteArrayInputStream(bytes), size, "src.bin")).getMessage();
    }
}
