package io.rlock.jedis;

import java.util.function.Supplier;
import javax.net.ssl.HostnameVerifier;
import javax.net.ssl.SSLParameters;
import javax.net.ssl.SSLSocketFactory;
import redis.clients.jedis.ClientSetInfoConfig;
import redis.clients.jedis.HostAndPortMapper;
import redis.clients.jedis.JedisClientConfig;
import redis.clients.jedis.RedisCredentials;
import redis.clients.jedis.RedisProtocol;
import redis.clients.jedis.SslOptions;
import redis.clients.jedis.authentication.AuthXManager;

/**
 * The user's {@link JedisClientConfig} for one engine connection: everything as the user set it
 * (credentials, TLS, timeouts, database, address mapper), except that it speaks RESP2 (Jedis's
 * reader hands RESP2 messages over as plain arrays; the engine then subscribes on a connection of
 * its own) and carries the engine's client name.
 */
final class SessionConfig implements JedisClientConfig {
    private final JedisClientConfig user;
    private final String clientName;

    SessionConfig(JedisClientConfig user, String clientName) {
        this.user = user;
        this.clientName = clientName;
    }

    @Override
    public RedisProtocol getRedisProtocol() {
        return RedisProtocol.RESP2;
    }

    @Override
    public String getClientName() {
        return clientName != null ? clientName : user.getClientName();
    }

    @Override
    public int getConnectionTimeoutMillis() {
        return user.getConnectionTimeoutMillis();
    }

    @Override
    public int getSocketTimeoutMillis() {
        return user.getSocketTimeoutMillis();
    }

    @Override
    public int getBlockingSocketTimeoutMillis() {
        return user.getBlockingSocketTimeoutMillis();
    }

    @Override
    public String getUser() {
        return user.getUser();
    }

    @Override
    public String getPassword() {
        return user.getPassword();
    }

    @Override
    public Supplier<RedisCredentials> getCredentialsProvider() {
        return user.getCredentialsProvider();
    }

    @Override
    public AuthXManager getAuthXManager() {
        return user.getAuthXManager();
    }

    @Override
    public int getDatabase() {
        return user.getDatabase();
    }

    @Override
    public boolean isSsl() {
        return user.isSsl();
    }

    @Override
    public SSLSocketFactory getSslSocketFactory() {
        return user.getSslSocketFactory();
    }

    @Override
    public SSLParameters getSslParameters() {
        return user.getSslParameters();
    }

    @Override
    public SslOptions getSslOptions() {
        return user.getSslOptions();
    }

    @Override
    public HostnameVerifier getHostnameVerifier() {
        return user.getHostnameVerifier();
    }

    @Override
    public HostAndPortMapper getHostAndPortMapper() {
        return user.getHostAndPortMapper();
    }

    @Override
    public boolean isReadOnlyForRedisClusterReplicas() {
        return false;
    }

    @Override
    public ClientSetInfoConfig getClientSetInfoConfig() {
        return user.getClientSetInfoConfig();
    }
}
