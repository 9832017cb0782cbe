package io.tenplex.examples;

import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.ByteArrayOutputStream;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import org.junit.jupiter.api.Test;

/** The example's command line: {@code --help} prints its usage (it once threw NumberFormatException). */
class ResumableTrainingTest {
    @Test
    void help_printsTheUsage_withoutAStackTrace() {
        PrintStream old = System.out;
        ByteArrayOutputStream out = new ByteArrayOutputStream();
        System.setOut(new PrintStream(out, true, StandardCharsets.UTF_8));
        try {
            ResumableTraining.main(new String[] {"--help"});
        } finally {
            System.setOut(old);
        }
        String text = out.toString(StandardCharsets.UTF_8);
        assertTrue(text.startsWith("usage: java -jar tenplex-client-example.jar [STEPS [SAVE_EVERY]]"), text);
    }
}
