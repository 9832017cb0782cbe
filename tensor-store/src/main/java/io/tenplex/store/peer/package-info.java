/**
 * The peer client owns daemon-to-daemon data transfer: sub-tensor range GETs to other daemons over
 * pooled Netty connections, streamed straight into the caller's buffer and checked against the
 * sender's CRC32C.
 */
package io.tenplex.store.peer;
