package rlock;

/** What a wait or a holding is about: the message type ({@code lock}, {@code read}, ...), key, owner. */
record Target(Family family, String key, String owner) {
}
