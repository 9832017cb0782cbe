/**
 * Sample formats: where the samples of a source file begin and end (fixed-size records, rows of a
 * {@code .npy} array, TFRecord records, text lines), one class per format, registered by name in
 * {@link io.tenplex.datasets.format.SampleFormats}.
 */
package io.tenplex.datasets.format;
