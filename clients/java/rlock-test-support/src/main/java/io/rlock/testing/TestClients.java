package io.rlock.testing;

import io.lettuce.core.RedisClient;
import io.lettuce.core.RedisURI;
import io.lettuce.core.cluster.RedisClusterClient;
import io.lettuce.core.resource.ClientResources;
import io.lettuce.core.resource.DefaultClientResources;
import io.rlock.RLockClient;
import io.rlock.RLockOptions;
import io.rlock.lettuce.LettuceRLocks;
import java.io.IOException;

/**
 * The tests' RLockClient, over Lettuce (rlock-lettuce), from a Lettuce URI:
 * {@code redis://[[user]:password@]host:port[/db]}, {@code rediss://...},
 * {@code redis-sentinel://host:port[,host:port]/mastername}. A server with
 * {@code cluster_enabled:1} is seeded as a Redis Cluster ({@code RedisClusterClient}).
 */
public final class TestClients {
    /** One set of Lettuce threads for every test client of the JVM. */
    private static final ClientResources RESOURCES = DefaultClientResources.create();
    private static final RedisClient LETTUCE = RedisClient.create(RESOURCES);

    private TestClients() {
    }

    public static RLockClient create(String uri) {
        return create(uri, new RLockOptions());
    }

    public static RLockClient create(String uri, RLockOptions options) {
        RedisURI redisUri = RedisURI.create(lettuceForm(uri));
        if (redisUri.getSentinels().isEmpty() && isCluster(redisUri)) {
            return LettuceRLocks.of(RedisClusterClient.create(RESOURCES, redisUri), redisUri, options);
        }
        return LettuceRLocks.of(LETTUCE, redisUri, options);
    }

    /**
     * {@code redis-sentinel://hosts/mastername} (the harness's form) as Lettuce writes it,
     * {@code redis-sentinel://hosts#mastername}: Lettuce reads the path as the database.
     */
    private static String lettuceForm(String uri) {
        if (!uri.matches("rediss?-sentinel://.*") || uri.contains("#")) {
            return uri;
        }
        int slash = uri.indexOf('/', uri.indexOf("//") + 2);
        if (slash < 0 || uri.substring(slash + 1).matches("\\d*")) {
            return uri;
        }
        return uri.substring(0, slash) + "#" + uri.substring(slash + 1);
    }

    /** Whether the server is a cluster node; a server that cannot be asked is taken as not one. */
    private static boolean isCluster(RedisURI uri) {
        if (uri.isSsl()) {
            return false; // the harness's clusters speak plain TCP
        }
        try (AdminConnection admin = AdminConnection.open(uri)) {
            return String.valueOf(admin.call("INFO", "cluster")).contains("cluster_enabled:1");
        } catch (IOException | RuntimeException e) {
            return false;
        }
    }
}
