/**
 * The daemon is the composition root: {@code tenplexd}'s command line and typed configuration, and
 * the lifecycle stack that starts the store and the REST server in order and closes them in reverse.
 */
package io.tenplex.daemon;
