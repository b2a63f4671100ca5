package io.rlock.internal.resp;

import io.rlock.internal.transport.Push;
import io.rlock.internal.transport.RespError;
import io.rlock.internal.transport.RespServerException;
import java.net.URI;
import java.net.URISyntaxException;
import java.net.URLDecoder;
import java.nio.charset.StandardCharsets;

/**
 * {@code redis://[[user]:password@]host[:port][/db]}, and {@code rediss://} for TLS. The user
 * and password may be percent-encoded; the port defaults to 6379 and the database to 0.
 */
public final class RedisUri {
    public final boolean tls;
    public final String host;
    public final int port;
    /** null when the URI names none (the server's {@code default} user). */
    public final String user;
    /** null when the URI names none. */
    public final String password;
    public final int db;
    /** Sentinel ({@code redis-sentinel://}): the master name, else null. */
    public final String masterName;
    /** Sentinel: the sentinels' {@code host:port} addresses (empty otherwise). */
    public final java.util.List<String> sentinels;

    private RedisUri(boolean tls, String host, int port, String user, String password, int db) {
        this(tls, host, port, user, password, db, null, java.util.List.of());
    }

    private RedisUri(boolean tls, String host, int port, String user, String password, int db, String masterName,
            java.util.List<String> sentinels) {
        this.masterName = masterName;
        this.sentinels = sentinels;
        this.tls = tls;
        this.host = host;
        this.port = port;
        this.user = user;
        this.password = password;
        this.db = db;
    }

    /** The same server with these credentials and database (a configuration that gives them apart). */
    public RedisUri withAuth(String user, String password, int db) {
        return new RedisUri(tls, host, port, user, password, db, masterName, sentinels);
    }

    /** {@code redis://host:port} ({@code rediss://} for TLS), without credentials or database. */
    public String address() {
        return (tls ? "rediss://" : "redis://") + (host.indexOf(':') >= 0 ? "[" + host + "]" : host) + ":" + port;
    }

    /**
     * A sentinel address list and master name, as Lettuce writes them:
     * {@code redis-sentinel://[[user]:password@]host:port[,host:port...]/mastername} (or
     * {@code #mastername}); the password is the data nodes' (the sentinels' own credentials are
     * an option). {@code rediss-sentinel://}: TLS to the sentinels and the data nodes.
     */
    public static RedisUri sentinel(String masterName, java.util.List<String> sentinels, String user, String password, int db) {
        return sentinel(false, masterName, sentinels, user, password, db);
    }

    public static RedisUri sentinel(boolean tls, String masterName, java.util.List<String> sentinels, String user,
            String password, int db) {
        if (masterName == null || masterName.isEmpty() || sentinels.isEmpty()) {
            throw new IllegalArgumentException("a master name and at least one sentinel host:port");
        }
        String[] first = sentinels.get(0).split(":");
        return new RedisUri(tls, first[0], first.length > 1 ? Integer.parseInt(first[1]) : 26379, user, password, db,
                masterName, java.util.List.copyOf(sentinels));
    }

    private static RedisUri parseSentinel(String text) {
        boolean tls = text.startsWith("rediss-sentinel://");
        String rest = text.substring(text.indexOf("://") + 3);
        String name = null;
        int hash = rest.indexOf('#');
        if (hash >= 0) {
            name = rest.substring(hash + 1);
            rest = rest.substring(0, hash);
        }
        int slash = rest.indexOf('/');
        String path = slash < 0 ? "" : rest.substring(slash + 1);
        String authority = slash < 0 ? rest : rest.substring(0, slash);
        if (name == null) {
            name = path;
        }
        String user = null;
        String password = null;
        int at = authority.lastIndexOf('@');
        if (at >= 0) {
            String info = authority.substring(0, at);
            authority = authority.substring(at + 1);
            int colon = info.indexOf(':');
            password = decode(colon < 0 ? info : info.substring(colon + 1));
            user = colon <= 0 ? null : decode(info.substring(0, colon));
        }
        java.util.List<String> sentinels = new java.util.ArrayList<>();
        for (String address : authority.split(",")) {
            if (!address.isEmpty()) {
                sentinels.add(address.contains(":") ? address : address + ":26379");
            }
        }
        try {
            return sentinel(tls, decode(name), sentinels, user, password, 0);
        } catch (IllegalArgumentException e) {
            throw new IllegalArgumentException("redis-sentinel://[password@]host:port[,host:port]/mastername: " + text, e);
        }
    }

    public static RedisUri parse(String text) {
        if (text.startsWith("redis-sentinel://") || text.startsWith("rediss-sentinel://")) {
            return parseSentinel(text);
        }
        URI uri;
        try {
            uri = new URI(text);
        } catch (URISyntaxException e) {
            throw new IllegalArgumentException("not a redis URI: " + text, e);
        }
        String scheme = uri.getScheme();
        if (!"redis".equals(scheme) && !"rediss".equals(scheme)) {
            throw new IllegalArgumentException("a redis URI starts with redis://, rediss://, redis-sentinel:// or rediss-sentinel://: " + text);
        }
        String host = uri.getHost();
        if (host == null || host.isEmpty()) {
            throw new IllegalArgumentException("no host in " + text);
        }
        if (host.startsWith("[") && host.endsWith("]")) {
            host = host.substring(1, host.length() - 1);
        }
        int port = uri.getPort() < 0 ? 6379 : uri.getPort();
        String user = null;
        String password = null;
        String info = uri.getRawUserInfo();
        if (info != null) {
            int colon = info.indexOf(':');
            if (colon < 0) {
                password = decode(info);
            } else {
                user = colon == 0 ? null : decode(info.substring(0, colon));
                password = decode(info.substring(colon + 1));
            }
        }
        int db = 0;
        String path = uri.getPath();
        if (path != null && !path.isEmpty() && !path.equals("/")) {
            try {
                db = Integer.parseInt(path.substring(1));
            } catch (NumberFormatException e) {
                throw new IllegalArgumentException("the path of a redis URI is the database number: " + text);
            }
            if (db < 0) {
                throw new IllegalArgumentException("negative database in " + text);
            }
        }
        return new RedisUri("rediss".equals(scheme), host, port, user, password, db);
    }

    private static String decode(String part) {
        return URLDecoder.decode(part.replace("+", "%2B"), StandardCharsets.UTF_8);
    }

    @Override
    public String toString() {
        if (masterName != null) {
            return (tls ? "rediss-sentinel://" : "redis-sentinel://") + String.join(",", sentinels) + "/" + masterName;
        }
        return (tls ? "rediss://" : "redis://") + (password != null ? (user != null ? user : "") + ":***@" : "")
                + host + ":" + port + "/" + db;
    }
}
