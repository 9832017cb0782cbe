/**
 * The peer client owns daemon-to-daemon data transfer: sub-tensor range GETs to other daemons over
 * pooled Netty connections, streamed straight into the caller's buffer and checked against the
 * sender's CRC32C; and how any call reaches a daemon ({@link io.tenplex.server.peer.DaemonLink}:
 * http or https with the trusted CAs, the bearer token, one shared HTTP client).
 */
package io.tenplex.server.peer;
