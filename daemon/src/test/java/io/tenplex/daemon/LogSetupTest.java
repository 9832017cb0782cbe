package io.tenplex.daemon;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import java.util.logging.Level;
import java.util.logging.LogRecord;
import org.junit.jupiter.api.Test;

/** The two log formats and the option values. */
class LogSetupTest {
    private final ObjectMapper json = new ObjectMapper();

    private static LogRecord record(Level level, String msg, Object... params) {
        LogRecord r = new LogRecord(level, msg);
        r.setParameters(params);
        r.setLoggerName("io.tenplex.jobs.reconfigure.Reconfiguration");
        return r;
    }

    @Test
    void json_oneObjectPerLine_withTheMessagesPairsAsFields() throws Exception {
        String line = new LogSetup.Json().format(record(Level.INFO, "reconfiguration committed job=gpt plan=p-1 "
                + "duration_ms=412 ratio=0.5 note=\"quoted\"\tdone: step=7."));
        assertTrue(line.endsWith("}" + System.lineSeparator()) && line.indexOf('\n') == line.length() - 1, line);
        JsonNode n = json.readTree(line);
        assertEquals("INFO", n.get("level").asText());
        assertEquals("io.tenplex.jobs.reconfigure.Reconfiguration", n.get("logger").asText());
        assertTrue(n.get("msg").asText().contains("note=\"quoted\"\tdone"), line);
        assertEquals("gpt", n.get("job").asText());
        assertEquals(412, n.get("duration_ms").asLong());
        assertTrue(n.get("duration_ms").isNumber() && n.get("ratio").isNumber(), line);
        assertEquals(7, n.get("step").asLong()); // the sentence's full stop is not part of the value
        assertTrue(n.get("ts").asText().endsWith("Z"), line);
    }

    @Test
    void json_reservedNamesAreNotOverwritten_andErrorsCarryTheStack() throws Exception {
        LogRecord r = record(Level.SEVERE, "failed level=x msg=y");
        r.setThrown(new IllegalStateException("boom\nsecond line"));
        JsonNode n = json.readTree(new LogSetup.Json().format(r));
        assertEquals("ERROR", n.get("level").asText());
        assertEquals("failed level=x msg=y", n.get("msg").asText());
        assertTrue(n.get("error").asText().startsWith("java.lang.IllegalStateException: boom\nsecond line"));
    }

    @Test
    void text_hasTheShapeOfTheEarlierLines() {
        String line = new LogSetup.Text().format(record(Level.WARNING, "part failed job=j plan=p"));
        assertTrue(line.matches("\\d{4}-\\d\\d-\\d\\dT\\d\\d:\\d\\d:\\d\\d\\.\\d{3}[+-]\\d{4} \\[WARN] Reconfiguration - "
                + "part failed job=j plan=p\\R"), line);
    }

    @Test
    void theHdf5LibrarysInfoLines_areQuiet_evenAtDebug() {
        LogSetup.apply("debug", "text");
        java.util.logging.Logger filters = java.util.logging.Logger.getLogger("io.jhdf.filter.FilterManager");
        assertTrue(!filters.isLoggable(Level.INFO) && filters.isLoggable(Level.WARNING));
        assertTrue(java.util.logging.Logger.getLogger("io.tenplex.jobs.Jobs").isLoggable(Level.FINE));
        LogSetup.apply("info", "text");
    }

    @Test
    void levelsAndFormats_unknownOnesAreRefused() {
        assertEquals(Level.FINE, LogSetup.level("DEBUG"));
        assertEquals(Level.WARNING, LogSetup.level("warn"));
        assertEquals("TRACE", LogSetup.name(Level.FINEST));
        IllegalArgumentException e = assertThrows(IllegalArgumentException.class, () -> LogSetup.level("verbose"));
        assertTrue(e.getMessage().contains("error, warn, info, debug, trace"), e.getMessage());
        e = assertThrows(IllegalArgumentException.class, () -> LogSetup.apply("info", "xml"));
        assertTrue(e.getMessage().contains("expected text or json"), e.getMessage());
    }
}
