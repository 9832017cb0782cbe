package io.tenplex.cli;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotEquals;

import com.fasterxml.jackson.databind.JsonNode;
import org.junit.jupiter.api.Test;

class RoleSignerTest {
    private static final String ROLE = "{\"world\":2,\"prefix\":\"tenplex/live/3/group\"}";

    /** The MAC Python's hmac computes for the same inputs (tests/python/test_live.py writes it the same way). */
    @Test
    void sign_matchesTheRanksMac() throws Exception {
        JsonNode v = TenplexCli.JSON.readTree(new RoleSigner("gpt", "5e".repeat(32)).sign(3, "r7-abc", ROLE));
        assertEquals("r7-abc", v.path("change").asText());
        assertEquals(ROLE, v.path("role").asText());
        assertEquals("f74a37ee9c6846773139a265970399de84eb3bc2a0ceaa87d02d9996fb7e7c1c", v.path("mac").asText());
    }

    @Test
    void sign_bindsTheReconfigurationAndTheJob() throws Exception {
        RoleSigner s = new RoleSigner("gpt", "5e".repeat(32));
        String three = TenplexCli.JSON.readTree(s.sign(3, "r7-abc", ROLE)).path("mac").asText();
        assertNotEquals(three, TenplexCli.JSON.readTree(s.sign(4, "r7-abc", ROLE)).path("mac").asText());
        assertNotEquals(three, TenplexCli.JSON.readTree(new RoleSigner("bert", "5e".repeat(32)).sign(3, "r7-abc", ROLE))
                .path("mac").asText());
        assertEquals("", TenplexCli.JSON.readTree(s.sign(3, null, ROLE)).path("change").asText());
    }

    @Test
    void random_secretsDifferAndAreNotPrinted() {
        RoleSigner a = RoleSigner.random("gpt");
        assertEquals(64, a.secret().length());
        assertNotEquals(a.secret(), RoleSigner.random("gpt").secret());
        assertFalse(a.toString().contains(a.secret()));
    }
}
