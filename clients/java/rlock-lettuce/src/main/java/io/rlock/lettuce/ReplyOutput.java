package io.rlock.lettuce;

import io.lettuce.core.codec.ByteArrayCodec;
import io.lettuce.core.output.CommandOutput;
import io.rlock.internal.transport.RespError;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.Deque;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * One reply of any shape, as Lettuce's parser hands it over, in the engine's value model
 * ({@link io.rlock.internal.transport.Connection}): strings as {@code String} (UTF-8: rlock's
 * keys, owners and replies are text), integers as {@code Long}, arrays (and RESP3 maps, which
 * Lettuce hands over as flat arrays of keys and values) as {@code List}, unless kept as {@code Map}s, an error reply as a
 * {@link RespError} value rather than a failed command, so that a pipeline's other replies stand.
 */
final class ReplyOutput extends CommandOutput<byte[], byte[], Object> {
    /**
     * Arrays being filled, innermost first, each with the count it still expects; made at the
     * first array (most replies are one value: not three deques a command, issue 46's allocation).
     */
    private Deque<List<Object>> open;
    private Deque<Integer> expected;
    /** Per open array: whether it is a RESP3 map's keys and values. */
    private Deque<Boolean> isMap;
    private final boolean keepMaps;

    /** {@code keepMaps}: RESP3 maps as {@code Map}s (the test fixtures' checks), not flat lists. */
    ReplyOutput(boolean keepMaps) {
        super(ByteArrayCodec.INSTANCE, null);
        this.keepMaps = keepMaps;
    }

    @Override
    public void set(ByteBuffer bytes) {
        add(bytes == null ? null : text(bytes));
    }

    @Override
    public void setSingle(ByteBuffer bytes) {
        add(bytes == null ? null : text(bytes));
    }

    @Override
    public void setBigNumber(ByteBuffer bytes) {
        add(bytes == null ? null : text(bytes));
    }

    @Override
    public void set(long integer) {
        add(integer);
    }

    @Override
    public void set(double number) {
        add(number);
    }

    @Override
    public void set(boolean value) {
        add(value);
    }

    @Override
    public void setError(ByteBuffer error) {
        add(new RespError(text(error)));
    }

    @Override
    public void setError(String error) {
        add(new RespError(error));
    }

    @Override
    public void multi(int count) {
        open(count, false);
    }

    private void open(int count, boolean map) {
        if (count < 0) {
            add(null);
            return;
        }
        List<Object> array = new ArrayList<>(count);
        if (count == 0) {
            add(map && keepMaps ? new LinkedHashMap<>() : array);
            return;
        }
        if (open == null) {
            open = new ArrayDeque<>();
            expected = new ArrayDeque<>();
            isMap = new ArrayDeque<>();
        }
        open.push(array);
        expected.push(count);
        isMap.push(map);
    }

    @Override
    public void multiArray(int count) {
        multi(count);
    }

    @Override
    public void multiSet(int count) {
        multi(count);
    }

    @Override
    public void multiMap(int count) {
        open(count * 2, true);
    }

    private void add(Object value) {
        while (true) {
            if (open == null || open.isEmpty()) {
                output = value;
                return;
            }
            List<Object> array = open.peek();
            array.add(value);
            if (array.size() < expected.peek()) {
                return;
            }
            open.pop();
            expected.pop();
            value = isMap.pop() && keepMaps ? asMap(array) : array; // full: an element of the array around it
        }
    }

    private static Map<Object, Object> asMap(List<Object> keysAndValues) {
        Map<Object, Object> map = new LinkedHashMap<>();
        for (int i = 0; i + 1 < keysAndValues.size(); i += 2) {
            map.put(keysAndValues.get(i), keysAndValues.get(i + 1));
        }
        return map;
    }

    /** The bytes as UTF-8 text (malformed bytes replaced), read once: no CharBuffer between. */
    private static String text(ByteBuffer bytes) {
        if (bytes.hasArray()) {
            return new String(bytes.array(), bytes.arrayOffset() + bytes.position(), bytes.remaining(), StandardCharsets.UTF_8);
        }
        byte[] copy = new byte[bytes.remaining()];
        bytes.duplicate().get(copy);
        return new String(copy, StandardCharsets.UTF_8);
    }
}
