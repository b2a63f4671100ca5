package io.rlock.internal;

import io.rlock.*;

/** What a wait or a holding is about: the message type ({@code lock}, {@code read}, ...), key, owner. */
public record Target(Family family, String key, String owner) {
}
