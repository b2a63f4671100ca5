package rlock;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.ArrayList;
import java.util.List;
import java.util.jar.JarEntry;
import java.util.jar.JarFile;
import org.junit.jupiter.api.Test;

/** The jar holds the library's own classes and its manifest, nothing else (no dependency, no tests). */
class JarTest {
    @Test
    void theJarHoldsOnlyTheLibrary() throws Exception {
        String path = System.getProperty("rlock.jar");
        assertTrue(path != null, "run by test.sh, which names the jar");
        List<String> foreign = new ArrayList<>();
        int classes = 0;
        try (JarFile jar = new JarFile(path)) {
            for (JarEntry entry : java.util.Collections.list(jar.entries())) {
                String name = entry.getName();
                if (name.equals("META-INF/") || name.equals("META-INF/MANIFEST.MF") || name.equals("rlock/")
                        || name.equals("rlock/resp/")) {
                    continue;
                }
                if (name.matches("rlock/(resp/)?[A-Za-z0-9$]+\\.class") && !name.contains("Test")) {
                    classes++;
                    continue;
                }
                foreign.add(name);
            }
        }
        assertEquals(List.of(), foreign);
        assertTrue(classes > 20, classes + " classes");
        // The library's public entry points are in it.
        for (String name : List.of("rlock.RLockClient", "rlock.RLock", "rlock.resp.RespConnection", "rlock.resp.RespReader")) {
            assertEquals(path, Class.forName(name).getProtectionDomain().getCodeSource().getLocation().getPath(), name);
        }
    }
}
