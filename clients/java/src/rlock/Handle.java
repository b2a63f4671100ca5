package rlock;

/**
 * The base of the handles {@link RLockClient} gives out: each is its client's {@link Engine}
 * and a name, and nothing else (a handle keeps no state of its own, the server does).
 */
abstract class Handle {
    final Engine engine;
    final String name;

    Handle(Engine engine, String name) {
        this.engine = engine;
        this.name = name;
    }

    public String getName() {
        return name;
    }
}
