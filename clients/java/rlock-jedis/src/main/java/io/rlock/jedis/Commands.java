package io.rlock.jedis;

import java.nio.charset.StandardCharsets;
import redis.clients.jedis.CommandArguments;
import redis.clients.jedis.commands.ProtocolCommand;

/** The engine's commands ({@code RLOCK.ACQUIRE}, ...) as Jedis {@link CommandArguments}, sent by its {@code sendCommand}. */
final class Commands {
    private Commands() {
    }

    static CommandArguments of(Object[] command) {
        CommandArguments args = new CommandArguments(named(String.valueOf(command[0])));
        for (int i = 1; i < command.length; i++) {
            Object arg = command[i];
            if (arg instanceof byte[] bytes) {
                args.add(bytes);
            } else {
                args.add(String.valueOf(arg).getBytes(StandardCharsets.UTF_8));
            }
        }
        return args;
    }

    /** A command Jedis does not know, by its name: Jedis's {@link ProtocolCommand}. */
    static ProtocolCommand named(String name) {
        byte[] raw = name.getBytes(StandardCharsets.US_ASCII);
        return new ProtocolCommand() {
            @Override
            public byte[] getRaw() {
                return raw;
            }

            @Override
            public String toString() {
                return name;
            }
        };
    }
}
