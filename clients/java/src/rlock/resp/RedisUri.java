package rlock.resp;

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

    private RedisUri(boolean tls, String host, int port, String user, String password, int db) {
        this.tls = tls;
        this.host = host;
        this.port = port;
        this.user = user;
        this.password = password;
        this.db = db;
    }

    public static RedisUri parse(String text) {
        URI uri;
        try {
            uri = new URI(text);
        } catch (URISyntaxException e) {
            throw new IllegalArgumentException("not a redis URI: " + text, e);
        }
        String scheme = uri.getScheme();
        if (!"redis".equals(scheme) && !"rediss".equals(scheme)) {
            throw new IllegalArgumentException("a redis URI starts with redis:// or rediss://: " + text);
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
        return (tls ? "rediss://" : "redis://") + (password != null ? (user != null ? user : "") + ":***@" : "")
                + host + ":" + port + "/" + db;
    }
}
