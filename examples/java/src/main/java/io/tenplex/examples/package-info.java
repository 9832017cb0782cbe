/** Examples of the JVM client: a training loop that resumes from its checkpoint in tenplexd. */
package io.tenplex.examples;
