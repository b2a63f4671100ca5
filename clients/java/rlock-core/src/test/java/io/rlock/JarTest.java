package io.rlock;

import static org.assertj.core.api.Assertions.assertThat;

import java.io.InputStream;
import java.lang.module.ModuleDescriptor;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.stream.Collectors;
import org.junit.jupiter.api.Test;

/**
 * The core's module exports the API package alone to everyone (the engine, io.rlock.internal,
 * only to the transport modules) and needs nothing but the JDK: a user of one transport carries
 * no other's dependency.
 */
class JarTest {
    @Test
    void theModuleExportsOnlyTheApiAndRequiresOnlyTheJdk() throws Exception {
        Path classes = Path.of(RLock.class.getProtectionDomain().getCodeSource().getLocation().toURI());
        Path descriptor = Files.isDirectory(classes) ? classes.resolve("module-info.class") : null;
        ModuleDescriptor module;
        if (descriptor != null) {
            try (InputStream in = Files.newInputStream(descriptor)) {
                module = ModuleDescriptor.read(in);
            }
        } else {
            try (var jar = new java.util.jar.JarFile(classes.toFile());
                    InputStream in = jar.getInputStream(jar.getEntry("module-info.class"))) {
                module = ModuleDescriptor.read(in);
            }
        }
        assertThat(module.name()).isEqualTo("io.rlock");
        assertThat(module.exports().stream().filter(e -> !e.isQualified()).map(ModuleDescriptor.Exports::source)
                .collect(Collectors.toSet())).as("exported to everyone").containsExactly("io.rlock");
        assertThat(module.exports().stream().filter(ModuleDescriptor.Exports::isQualified)
                .flatMap(e -> e.targets().stream()).collect(Collectors.toSet()))
                .as("the engine's packages, open only to the transport modules")
                .containsExactlyInAnyOrder("io.rlock.lettuce", "io.rlock.jedis", "io.rlock.redisson", "io.rlock.spring.data");
        assertThat(module.exports().stream().filter(ModuleDescriptor.Exports::isQualified).map(ModuleDescriptor.Exports::source)
                .collect(Collectors.toSet())).as("the SPI and the engine, not the engine's own RESP client")
                .containsExactlyInAnyOrder("io.rlock.internal", "io.rlock.internal.transport");
        assertThat(module.requires().stream().map(ModuleDescriptor.Requires::name).collect(Collectors.toSet()))
                .containsExactly("java.base");
    }
}
