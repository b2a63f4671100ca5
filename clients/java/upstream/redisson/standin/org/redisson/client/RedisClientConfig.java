package org.redisson.client;

/** Stand-in for Redisson's {@code RedisClientConfig}: the address of one server, for {@link RedisClient}. */
public class RedisClientConfig {
    private String address;

    /** {@code redis://host:port}, as Redisson's. */
    public RedisClientConfig setAddress(String address) {
        this.address = address;
        return this;
    }

    public String getAddress() {
        return address;
    }
}
