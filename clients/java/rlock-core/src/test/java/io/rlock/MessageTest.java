package io.rlock;

import io.rlock.internal.*;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;

import java.nio.charset.StandardCharsets;
import java.util.List;
import org.junit.jupiter.api.Test;

/** The NOTIFY message format of docs/notify.md, parsed on its own. */
class MessageTest {
    private static Message parse(String text) {
        return Message.parse(text.getBytes(StandardCharsets.UTF_8));
    }

    @Test
    void splitsAsTheProtocolSays() {
        Message m = parse("granted lock 1763900000123456 5 jobs1 worker-7");
        assertEquals("granted", m.event);
        assertEquals("lock", m.type);
        assertEquals(1763900000123456L, m.token());
        assertEquals("jobs1", m.key);
        assertEquals("worker-7", m.owner);
    }

    @Test
    void keysAndOwnersMayHoldSpaces() {
        Message m = parse("lost read 7 9 a b\u0000 c d  owner with  spaces ");
        assertEquals("a b\u0000 c d ", m.key);
        assertEquals("owner with  spaces ", m.owner);
        assertEquals(7, m.token());
        Message latch = parse("granted latch 1 3 k:1 ");
        assertEquals("k:1", latch.key);
        assertEquals("", latch.owner);
        assertEquals("", parse("granted latch 1 3 k:1").owner);
        Message timeout = parse("timeout lock - 0  ");
        assertEquals("", timeout.key);
        assertEquals(-1, timeout.token());
        Message unicode = parse("granted permits 5 5 schlüssel o");
        assertNull(unicode, "key-length counts bytes: 'schlüssel' is 10 bytes, so 5 bytes leave no space before the owner");
        assertEquals("schlüssel", parse("granted permits 5 10 schlüssel o").key);
    }

    @Test
    void malformedMessagesAreIgnored() {
        for (String bad : List.of("granted lock 1", "granted lock 1 x key owner", "granted lock 1 10 short",
                "granted lock 1 3 keyXowner", "granted lock 1 +3 key owner", "", "a b c ")) {
            assertNull(parse(bad), bad);
        }
    }
}
