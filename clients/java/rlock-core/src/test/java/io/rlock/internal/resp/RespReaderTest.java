package io.rlock.internal.resp;

import io.rlock.internal.transport.Push;
import io.rlock.internal.transport.RespError;
import io.rlock.internal.transport.RespServerException;
import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.ByteArrayInputStream;
import java.io.EOFException;
import java.io.IOException;
import java.io.InputStream;
import java.math.BigInteger;
import java.nio.charset.StandardCharsets;
import java.util.List;
import java.util.Map;
import java.util.Set;
import org.junit.jupiter.api.Test;

/** The parser on its own: every RESP2 and RESP3 type, split reads, malformed input. */
class RespReaderTest {
    private static RespReader reader(String text) {
        return new RespReader(new ByteArrayInputStream(text.getBytes(StandardCharsets.ISO_8859_1)));
    }

    /** A stream that hands out one byte per read: values split anywhere must still parse. */
    private static RespReader trickle(String text) {
        byte[] bytes = text.getBytes(StandardCharsets.ISO_8859_1);
        return new RespReader(new InputStream() {
            int at;

            @Override
            public int read() {
                return at < bytes.length ? bytes[at++] & 0xff : -1;
            }

            @Override
            public int read(byte[] b, int off, int len) {
                if (at >= bytes.length) {
                    return -1;
                }
                b[off] = bytes[at++];
                return 1;
            }
        });
    }

    private static Object one(String text) throws IOException {
        Object whole = reader(text).read();
        Object split = trickle(text).read();
        assertEquals(describe(whole), describe(split), "the same value whether read whole or byte by byte");
        return whole;
    }

    private static String describe(Object value) {
        if (value instanceof byte[]) {
            return "bytes:" + new String((byte[]) value, StandardCharsets.ISO_8859_1);
        }
        if (value instanceof List) {
            return ((List<?>) value).stream().map(RespReaderTest::describe).toList().toString();
        }
        if (value instanceof java.util.Map) {
            StringBuilder out = new StringBuilder("{");
            ((java.util.Map<?, ?>) value).forEach((k, v) -> out.append(describe(k)).append('=').append(describe(v)).append(','));
            return out.append('}').toString();
        }
        if (value instanceof Push) {
            return "push" + describe(((Push) value).data());
        }
        return String.valueOf(value) + (value == null ? "" : ":" + value.getClass().getSimpleName());
    }

    private static String text(Object bulk) {
        return new String((byte[]) bulk, StandardCharsets.UTF_8);
    }

    @Test
    void simpleValues() throws IOException {
        assertEquals("OK", one("+OK\r\n"));
        assertEquals("WAITING", one("+WAITING\r\n"));
        assertEquals(1795628437448036L, one(":1795628437448036\r\n"));
        assertEquals(-7L, one(":-7\r\n"));
        assertEquals(3.25, one(",3.25\r\n"));
        assertEquals(Double.POSITIVE_INFINITY, one(",inf\r\n"));
        assertEquals(Double.NEGATIVE_INFINITY, one(",-inf\r\n"));
        assertTrue(((Double) one(",nan\r\n")).isNaN());
        assertEquals(Boolean.TRUE, one("#t\r\n"));
        assertEquals(Boolean.FALSE, one("#f\r\n"));
        assertEquals(new BigInteger("3492890328409238509324850943850943825024385"),
                one("(3492890328409238509324850943850943825024385\r\n"));
        assertEquals("Some string", one("=15\r\ntxt:Some string\r\n"));
    }

    @Test
    void nullsOfBothProtocols() throws IOException {
        assertNull(one("_\r\n"));
        assertNull(one("$-1\r\n"));
        assertNull(one("*-1\r\n"));
    }

    @Test
    void bulkStringsAreBinarySafe() throws IOException {
        assertEquals("", text(one("$0\r\n\r\n")));
        assertEquals("a\r\nb", text(one("$4\r\na\r\nb\r\n")));
        byte[] binary = (byte[]) one("$3\r\n\u0000\u00ff\r\r\n");
        assertArrayEquals(new byte[] {0, (byte) 0xff, '\r'}, binary);
    }

    @Test
    void errorsAreValuesWithTheirCode() throws IOException {
        RespError error = (RespError) one("-WRONGTYPE Operation against a key holding the wrong kind of value\r\n");
        assertEquals("WRONGTYPE", error.code());
        assertEquals("WRONGTYPE Operation against a key holding the wrong kind of value", error.message());
        RespError blob = (RespError) one("!21\r\nSYNTAX invalid syntax\r\n");
        assertEquals("SYNTAX", blob.code());
        List<?> exec = (List<?>) one("*2\r\n+OK\r\n-ERR no\r\n");
        assertEquals("OK", exec.get(0));
        assertEquals(new RespError("ERR no"), exec.get(1));
    }

    @Test
    void aggregates() throws IOException {
        List<?> list = (List<?>) one("*3\r\n:1\r\n$3\r\nfoo\r\n*2\r\n+a\r\n_\r\n");
        assertEquals(1L, list.get(0));
        assertEquals("foo", text(list.get(1)));
        assertEquals(List.of("a"), ((List<?>) list.get(2)).subList(0, 1));
        assertNull(((List<?>) list.get(2)).get(1));
        assertEquals(List.of(), one("*0\r\n"));
        Set<?> set = (Set<?>) one("~2\r\n+x\r\n+y\r\n");
        assertEquals(Set.of("x", "y"), set);
    }

    @Test
    void mapsKeepOrderAndDecodeTheirKeys() throws IOException {
        Map<?, ?> map = (Map<?, ?>) one("%3\r\n$5\r\nowner\r\n$2\r\nw1\r\n+holds\r\n:2\r\n$8\r\nwatchdog\r\n_\r\n");
        assertEquals(List.of("owner", "holds", "watchdog"), List.copyOf(map.keySet()));
        assertEquals("w1", text(map.get("owner")));
        assertEquals(2L, map.get("holds"));
        assertTrue(map.containsKey("watchdog"));
        assertNull(map.get("watchdog"));
        Map<?, ?> nested = (Map<?, ?>) one("%1\r\n+holders\r\n*1\r\n%1\r\n+mode\r\n+read\r\n");
        Map<?, ?> holder = (Map<?, ?>) ((List<?>) nested.get("holders")).get(0);
        assertEquals("read", holder.get("mode"));
    }

    @Test
    void pushesAreMarked() throws IOException {
        Push push = (Push) one(">3\r\n$7\r\nmessage\r\n$11\r\n__rlock__:8\r\n$32\r\ngranted lock 17 4 jobs owner-1 x\r\n");
        assertEquals("message", push.kind());
        assertEquals("granted lock 17 4 jobs owner-1 x", new String(push.payload(), StandardCharsets.UTF_8));
        Push subscribed = (Push) one(">3\r\n$9\r\nsubscribe\r\n$1\r\nc\r\n:1\r\n");
        assertEquals("subscribe", subscribed.kind());
        assertNull(subscribed.payload());
    }

    @Test
    void attributesAreSkipped() throws IOException {
        assertEquals(7L, one("|1\r\n+key-popularity\r\n%1\r\n$1\r\na\r\n,0.19\r\n:7\r\n"));
    }

    @Test
    void valuesFollowOneAnother() throws IOException {
        RespReader r = trickle("+OK\r\n:1\r\n>2\r\n+message\r\n+x\r\n$1\r\nz\r\n");
        assertEquals("OK", r.read());
        assertEquals(1L, r.read());
        assertInstanceOf(Push.class, r.read());
        assertEquals("z", text(r.read()));
        assertThrows(EOFException.class, r::read);
    }

    @Test
    void truncatedInputIsEndOfStream() {
        for (String cut : List.of("", "+OK", "+OK\r", "$5\r\nabc", "*2\r\n:1\r\n", ":12")) {
            assertThrows(EOFException.class, () -> reader(cut).read(), cut);
        }
    }

    @Test
    void malformedInputIsRefused() {
        for (String bad : List.of("?x\r\n", ":12a\r\n", "$-2\r\n", "$3\r\nabcd\r\n", "+OK\n", "+OK\rx",
                "#x\r\n", ",1.2.3\r\n", "_x\r\n", ">0\r\n", "=3\r\nabc\r\n", "*-5\r\n", "%-1\r\n",
                "$99999999999\r\n", "(12x\r\n")) {
            assertThrows(RespProtocolException.class, () -> reader(bad).read(), bad);
        }
    }

    @Test
    void nestingIsBounded() {
        String deep = "*1\r\n".repeat(RespReader.MAX_DEPTH + 2) + ":1\r\n";
        assertThrows(RespProtocolException.class, () -> reader(deep).read());
        String fine = "*1\r\n".repeat(10) + ":1\r\n";
        assertEquals(List.of(List.of(List.of(List.of(List.of(List.of(List.of(List.of(List.of(List.of(1L)))))))))),
                assertThrowsNothing(fine));
    }

    private static Object assertThrowsNothing(String text) {
        try {
            return reader(text).read();
        } catch (IOException e) {
            throw new AssertionError(e);
        }
    }

    @Test
    void lengthsAreBounded() {
        RespReader small = new RespReader(new ByteArrayInputStream("$10\r\n0123456789\r\n".getBytes(StandardCharsets.US_ASCII)), 5);
        assertThrows(RespProtocolException.class, small::read);
    }

    @Test
    void writerEncodesBulkStrings() {
        byte[] bytes = RespWriter.encode("RLOCK.ACQUIRE", "k", "ö", 30000L, new byte[] {0, '\r', '\n'});
        assertEquals("*5\r\n$13\r\nRLOCK.ACQUIRE\r\n$1\r\nk\r\n$2\r\n\u00c3\u00b6\r\n$5\r\n30000\r\n$3\r\n\u0000\r\n\r\n",
                new String(bytes, StandardCharsets.ISO_8859_1));
        assertThrows(IllegalArgumentException.class, () -> RespWriter.encode());
        assertThrows(IllegalArgumentException.class, () -> RespWriter.encode("GET", (Object) null));
        assertThrows(IllegalArgumentException.class, () -> RespWriter.encode("GET", 1.5));
    }

    @Test
    void writerAndReaderAgree() throws IOException {
        // A command is a RESP array of bulk strings: reading it back gives the arguments.
        byte[] bytes = RespWriter.encode("SET", "key with spaces", "v\r\n", 42);
        List<?> back = (List<?>) new RespReader(new ByteArrayInputStream(bytes)).read();
        assertEquals(List.of("SET", "key with spaces", "v\r\n", "42"), back.stream().map(RespReaderTest::text).toList());
    }
}
