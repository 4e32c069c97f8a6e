"""Geron, "Hands-On Machine Learning" (3rd edition), chapter 16: NLP with RNNs and attention,
with ``import minitape as tf``.

The notebook's code as printed, small sizes, and small synthetic integer token ids in place
of ``TextVectorization`` and the IMDB / English-Spanish downloads (id 0 is padding, as the
vectorization layer makes it). Each model builds and trains; beyond that each test checks
what the masks are for: adding padding to a sentence leaves the model's outputs at its real
positions unchanged.

Departures from the printed code, forced by minitape's functional models (a ``KerasTensor``
has no values, so an op cannot compute on one: see ``minitape/keras/functional.py``):
``Input(shape=[None], dtype="int32")`` takes the ids (no string input); the Bidirectional
encoder's states are joined with ``Concatenate`` instead of ``tf.concat``; the masks made
with ``tf.math.not_equal(ids, 0)`` and the Transformer are computed eagerly on the ids.
"""

from __future__ import annotations

import numpy as np

import minitape as tf
from minitape.keras.masking import get_keras_mask

RNG = np.random.default_rng(16)
vocab_size = 30
embed_size = 8


def padded_ids(n, max_length, rng=RNG):
    """``n`` sentences of random ids in [1, vocab_size), of lengths 2..max_length, padded with
    0 at the end (as TextVectorization)."""
    ids = np.zeros((n, max_length), np.int32)
    for row, length in zip(ids, rng.integers(2, max_length + 1, n)):
        row[:length] = rng.integers(1, vocab_size, length)
    return ids


def run(model, inputs):
    """The model's output as an array (a model made with ``outputs=[Y_proba]`` returns a
    list of one, as Keras)."""
    out = model(inputs)
    return (out[0] if isinstance(out, list) else out).numpy()


def pad_more(ids, extra=3):
    return np.concatenate([ids, np.zeros((len(ids), extra), ids.dtype)], axis=1)


def test_sentiment_analysis_with_masking():
    # "Sentiment Analysis": Embedding(mask_zero=True) + GRU; the label is whether id 1 occurs
    X_train = padded_ids(64, 10)
    y_train = (X_train == 1).any(axis=1).astype(np.float32)
    tf.random.set_seed(42)
    model = tf.keras.Sequential([
        tf.keras.layers.Embedding(vocab_size, embed_size, mask_zero=True),
        tf.keras.layers.GRU(16),
        tf.keras.layers.Dense(1, activation="sigmoid")
    ])
    model.compile(loss="binary_crossentropy", optimizer="nadam",
                  metrics=["accuracy"])
    history = model.fit(X_train, y_train, epochs=2, verbose=0)
    assert np.isfinite(history.history["loss"]).all()
    np.testing.assert_allclose(model(pad_more(X_train[:8])).numpy(),
                               model(X_train[:8]).numpy(), rtol=1e-5, atol=1e-6)

    # The same, the mask made by hand and given to the GRU (computed eagerly on the ids)
    token_ids = tf.constant(X_train[:8])
    mask = tf.math.not_equal(token_ids, 0)
    Z = tf.keras.layers.Embedding(vocab_size, embed_size)(token_ids)
    gru = tf.keras.layers.GRU(16, dropout=0.2)
    Z_masked = gru(Z, mask=mask)
    lengths = X_train[:8].astype(bool).sum(axis=1)
    for b in range(8):   # the last output is the last real step's
        alone = gru(Z[b:b + 1, :lengths[b]])
        np.testing.assert_allclose(Z_masked.numpy()[b], alone.numpy()[0], rtol=1e-5,
                                   atol=1e-6)


def encoder_decoder_data(n=48):
    X_train = padded_ids(n, 7)
    Y_train = padded_ids(n, 6)
    sos = vocab_size - 1   # the "startofseq" token
    X_train_dec = np.concatenate([np.full((n, 1), sos, np.int32), Y_train[:, :-1]], axis=1)
    X_train_dec[Y_train == 0] = 0
    return X_train, X_train_dec, Y_train


def test_encoder_decoder_with_masks():
    # "An Encoder-Decoder Network for Neural Machine Translation"
    X_train, X_train_dec, Y_train = encoder_decoder_data()
    tf.random.set_seed(42)
    encoder_input_ids = tf.keras.layers.Input(shape=[None], dtype="int32")
    decoder_input_ids = tf.keras.layers.Input(shape=[None], dtype="int32")
    encoder_embedding_layer = tf.keras.layers.Embedding(vocab_size, embed_size,
                                                        mask_zero=True)
    decoder_embedding_layer = tf.keras.layers.Embedding(vocab_size, embed_size,
                                                        mask_zero=True)
    encoder_embeddings = encoder_embedding_layer(encoder_input_ids)
    decoder_embeddings = decoder_embedding_layer(decoder_input_ids)
    encoder = tf.keras.layers.LSTM(16, return_state=True)
    encoder_outputs, *encoder_state = encoder(encoder_embeddings)
    decoder = tf.keras.layers.LSTM(16, return_sequences=True)
    decoder_outputs = decoder(decoder_embeddings, initial_state=encoder_state)
    output_layer = tf.keras.layers.Dense(vocab_size, activation="softmax")
    Y_proba = output_layer(decoder_outputs)
    model = tf.keras.Model(inputs=[encoder_input_ids, decoder_input_ids],
                           outputs=[Y_proba])
    model.compile(loss="sparse_categorical_crossentropy", optimizer="nadam",
                  metrics=["accuracy"])
    history = model.fit((X_train, X_train_dec), Y_train, epochs=2, verbose=0)
    assert np.isfinite(history.history["loss"]).all()
    # padding the English sentences more changes nothing: the encoder skips the padding
    Y = run(model, (X_train[:4], X_train_dec[:4]))
    np.testing.assert_allclose(run(model, (pad_more(X_train[:4]), X_train_dec[:4])), Y,
                               rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(Y.sum(axis=-1), 1.0, rtol=1e-5)


def test_bidirectional_encoder_with_attention():
    # "Bidirectional RNNs" and "Attention Mechanisms" (Luong attention, layers.Attention)
    X_train, X_train_dec, Y_train = encoder_decoder_data()
    tf.random.set_seed(42)
    encoder_input_ids = tf.keras.layers.Input(shape=[None], dtype="int32")
    decoder_input_ids = tf.keras.layers.Input(shape=[None], dtype="int32")
    encoder_embeddings = tf.keras.layers.Embedding(vocab_size, embed_size,
                                                   mask_zero=True)(encoder_input_ids)
    decoder_embeddings = tf.keras.layers.Embedding(vocab_size, embed_size,
                                                   mask_zero=True)(decoder_input_ids)
    encoder = tf.keras.layers.Bidirectional(
        tf.keras.layers.LSTM(8, return_sequences=True, return_state=True))
    encoder_outputs, *encoder_state = encoder(encoder_embeddings)
    encoder_state = [tf.keras.layers.Concatenate(axis=-1)(encoder_state[::2]),  # short-term
                     tf.keras.layers.Concatenate(axis=-1)(encoder_state[1::2])]  # long-term
    decoder = tf.keras.layers.LSTM(16, return_sequences=True)
    decoder_outputs = decoder(decoder_embeddings, initial_state=encoder_state)
    attention_layer = tf.keras.layers.Attention()
    attention_outputs = attention_layer([decoder_outputs, encoder_outputs])
    output_layer = tf.keras.layers.Dense(vocab_size, activation="softmax")
    Y_proba = output_layer(attention_outputs)
    model = tf.keras.Model(inputs=[encoder_input_ids, decoder_input_ids],
                           outputs=[Y_proba])
    model.compile(loss="sparse_categorical_crossentropy", optimizer="nadam",
                  metrics=["accuracy"])
    history = model.fit((X_train, X_train_dec), Y_train, epochs=2, verbose=0)
    assert np.isfinite(history.history["loss"]).all()
    # the attention weights of the padded English positions are 0, so more padding
    # changes nothing at the real Spanish positions
    Y = run(model, (X_train[:4], X_train_dec[:4]))
    Y_more = run(model, (pad_more(X_train[:4]), X_train_dec[:4]))
    real = X_train_dec[:4] != 0
    np.testing.assert_allclose(Y_more[real], Y[real], rtol=1e-5, atol=1e-6)


class PositionalEncoding(tf.keras.layers.Layer):
    def __init__(self, max_length, embed_size, dtype=tf.float32, **kwargs):
        super().__init__(dtype=dtype, **kwargs)
        assert embed_size % 2 == 0, "embed_size must be even"
        p, i = np.meshgrid(np.arange(max_length),
                           2 * np.arange(embed_size // 2))
        pos_emb = np.empty((1, max_length, embed_size))
        pos_emb[0, :, ::2] = np.sin(p / 10_000 ** (i / embed_size)).T
        pos_emb[0, :, 1::2] = np.cos(p / 10_000 ** (i / embed_size)).T
        self.pos_encodings = tf.constant(pos_emb.astype(self.dtype))
        self.supports_masking = True

    def call(self, inputs):
        batch_max_length = tf.shape(inputs)[1]
        return inputs + self.pos_encodings[:, :batch_max_length]


def test_positional_encoding():
    # "Positional encodings": P[p, 2i] = sin(p / 10000^(2i/d)), P[p, 2i+1] = cos(...)
    figure_max_length, figure_embed_size = 20, 6
    pos_emb = PositionalEncoding(figure_max_length, figure_embed_size)
    zeros = np.zeros((1, figure_max_length, figure_embed_size), np.float32)
    P = pos_emb(zeros)[0].numpy()
    p, i = 7, 2
    np.testing.assert_allclose(P[p, 2 * i], np.sin(p / 10_000 ** (2 * i / 6)), rtol=1e-6)
    np.testing.assert_allclose(P[p, 2 * i + 1], np.cos(p / 10_000 ** (2 * i / 6)), rtol=1e-6)
    # it keeps the mask of the embeddings (supports_masking = True)
    ids = np.array([[3, 4, 0, 0], [5, 0, 0, 0]])
    embeddings = tf.keras.layers.Embedding(vocab_size, 6, mask_zero=True)(ids)
    encoded = pos_emb(embeddings)
    np.testing.assert_array_equal(get_keras_mask(encoded).numpy(), ids != 0)
    np.testing.assert_allclose(encoded.numpy() - embeddings.numpy(),
                               np.broadcast_to(P[:4], (2, 4, 6)), atol=1e-6)


def transformer(encoder_input_ids, decoder_input_ids, training=False, seed=42):
    """Geron's Transformer, eagerly on the ids (N = 2 blocks, small sizes), returning
    Y_proba and the trainable weights."""
    tf.random.set_seed(seed)
    max_length = 20
    embed_size = 8
    encoder_embedding_layer = tf.keras.layers.Embedding(vocab_size, embed_size,
                                                        mask_zero=True)
    decoder_embedding_layer = tf.keras.layers.Embedding(vocab_size, embed_size,
                                                        mask_zero=True)
    encoder_embeddings = encoder_embedding_layer(encoder_input_ids)
    decoder_embeddings = decoder_embedding_layer(decoder_input_ids)
    pos_embed_layer = PositionalEncoding(max_length, embed_size)
    encoder_in = pos_embed_layer(encoder_embeddings)
    decoder_in = pos_embed_layer(decoder_embeddings)

    N = 2  # instead of 6
    num_heads = 2
    dropout_rate = 0.1
    n_units = 16  # for the first Dense layer in each Feed Forward block
    encoder_pad_mask = tf.math.not_equal(encoder_input_ids, 0)[:, tf.newaxis]
    Z = encoder_in
    layers = [encoder_embedding_layer, decoder_embedding_layer]
    for _ in range(N):
        skip = Z
        attn_layer = tf.keras.layers.MultiHeadAttention(
            num_heads=num_heads, key_dim=embed_size, dropout=dropout_rate)
        Z = attn_layer(Z, value=Z, attention_mask=encoder_pad_mask, training=training)
        Z = tf.keras.layers.LayerNormalization()(tf.keras.layers.Add()([Z, skip]))
        skip = Z
        Z = tf.keras.layers.Dense(n_units, activation="relu")(Z)
        Z = tf.keras.layers.Dense(embed_size)(Z)
        Z = tf.keras.layers.Dropout(dropout_rate)(Z, training=training)
        Z = tf.keras.layers.LayerNormalization()(tf.keras.layers.Add()([Z, skip]))
        layers.append(attn_layer)

    batch_max_len_dec = tf.shape(decoder_embeddings)[1]
    decoder_pad_mask = tf.math.not_equal(decoder_input_ids, 0)[:, tf.newaxis]
    causal_mask = tf.linalg.band_part(  # creates a lower triangular matrix
        tf.ones((batch_max_len_dec, batch_max_len_dec), tf.bool), -1, 0)

    encoder_outputs = Z  # let's save the encoder's final outputs
    Z = decoder_in  # the decoder starts with its own inputs
    for _ in range(N):
        skip = Z
        attn_layer = tf.keras.layers.MultiHeadAttention(
            num_heads=num_heads, key_dim=embed_size, dropout=dropout_rate)
        Z = attn_layer(Z, value=Z, attention_mask=causal_mask & decoder_pad_mask,
                       training=training)
        Z = tf.keras.layers.LayerNormalization()(tf.keras.layers.Add()([Z, skip]))
        skip = Z
        attn_layer = tf.keras.layers.MultiHeadAttention(
            num_heads=num_heads, key_dim=embed_size, dropout=dropout_rate)
        Z = attn_layer(Z, value=encoder_outputs, attention_mask=encoder_pad_mask,
                       training=training)
        Z = tf.keras.layers.LayerNormalization()(tf.keras.layers.Add()([Z, skip]))
        skip = Z
        Z = tf.keras.layers.Dense(n_units, activation="relu")(Z)
        Z = tf.keras.layers.Dense(embed_size)(Z)
        Z = tf.keras.layers.LayerNormalization()(tf.keras.layers.Add()([Z, skip]))

    Y_proba = tf.keras.layers.Dense(vocab_size, activation="softmax")(Z)
    return Y_proba, get_keras_mask(Y_proba)


def test_transformer_encoder_and_decoder():
    # "Attention Is All You Need: The Original Transformer Architecture"
    X, X_dec, Y = encoder_decoder_data(6)
    Y_proba, mask = transformer(tf.constant(X), tf.constant(X_dec))
    assert Y_proba.shape == (6, X_dec.shape[1], vocab_size)
    np.testing.assert_allclose(Y_proba.numpy().sum(-1), 1.0, rtol=1e-5)
    np.testing.assert_array_equal(mask.numpy(), X_dec != 0)   # the mask reached the output
    # the same weights (same seed): padding the English sentences more changes nothing;
    # the causal mask: changing the last Spanish token changes only the last position
    Y_more, _ = transformer(tf.constant(pad_more(X)), tf.constant(X_dec))
    real = X_dec != 0
    np.testing.assert_allclose(Y_more.numpy()[real], Y_proba.numpy()[real], rtol=1e-5,
                               atol=1e-6)
    X_dec_changed = X_dec.copy()
    X_dec_changed[:, -1] = 5
    Y_changed, _ = transformer(tf.constant(X), tf.constant(X_dec_changed))
    np.testing.assert_allclose(Y_changed.numpy()[:, :-1][real[:, :-1]],
                               Y_proba.numpy()[:, :-1][real[:, :-1]], rtol=1e-5, atol=1e-6)
    # while training, dropout makes the outputs differ
    Y_train, _ = transformer(tf.constant(X), tf.constant(X_dec), training=True)
    assert not np.allclose(Y_train.numpy(), Y_proba.numpy())
