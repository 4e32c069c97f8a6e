# ruff: noqa: E701, E731, E741, F811  (the book's code as printed: one-line ifs, lambdas, l,
# methods added to a class under one name, ``forward``)
"""The TensorFlow code of "Dive into Deep Learning" (d2l.ai), chapters 9-10, run with
``import minitape as tf``: recurrent neural networks (sequences, text, language models, RNNs
from scratch and concise) and modern recurrent networks (LSTM, GRU, deep and bidirectional
RNNs, machine translation, encoder-decoder, sequence to sequence), one test per section, the
section's code as printed in its TensorFlow tab, with smaller sizes (epochs, hidden units,
batches) so that the file runs in seconds.

``tests/d2l_minitape_rnn.py`` is the d2l library those chapters build. No network: The Time
Machine and the English-French pairs are small synthetic texts of the same format, written
where the book's loaders look (``../data/timemachine.txt``, ``../data/fra-eng.zip``); d2l's
own ``download`` finds them there (a cache hit, its SHA-1 check included).

The numbers are checked against independent values: each model's forward pass is written
again in NumPy (float64; Keras's weights' layouts for the Keras layers), its loss must agree,
the tape's gradient must agree with the central difference of the NumPy loss along a random
direction, and d2l's clipping (written with ``tf.reduce_sum`` and ``tf.math.sqrt``) must
scale it by ``min(1, theta / norm)``; greedy predictions and the printed lines are replayed;
backpropagation through time against the section's closed forms; perplexity in closed form;
the sequence-to-sequence losses and ``sequence_mask`` against NumPy; beam search on the
section's worked example. The book's own surprises are kept and checked as TensorFlow gives
them: the seq2seq loss counts the padding, the GRU of 10.2 (not time-major) recurs along the
batch axis, and ``BiRNNScratch`` needs initial states. The last part tests what these
chapters needed in minitape: ``tf.math.top_k``.
"""

from __future__ import annotations

import hashlib
import math
import os
import types
import zipfile

import numpy as np
import pytest

import d2l_minitape_rnn as d2l
import minitape as tf
from test_textbook_d2l import _no_rendering  # noqa: F401


# -- helpers: the synthetic texts where the book's loaders look ------------------------------

WORDS = ("the time traveller said that we could move freely in space but not in time "
         "and so the psychologist asked him about the machine he had made").split()


def time_machine_text(n_lines=120, seed=0):
    """A text in The Time Machine's format (Project Gutenberg's plain text): lines of words
    with capitals, punctuation and blank lines."""
    rng = np.random.default_rng(seed)
    lines = ["The Time Machine, by H. G. Wells [1898]", ""]
    for i in range(n_lines):
        words = [WORDS[j] for j in rng.integers(0, len(WORDS), rng.integers(4, 10))]
        line = " ".join(words).capitalize() + rng.choice([".", ",", ";", "!", "?"])
        lines.append(line)
        if i % 9 == 8:
            lines.append("")
    return "\n".join(lines) + "\n"


PAIRS = [("Go.", "Va\u202f!"), ("Hi.", "Salut\u202f!"), ("Run!", "Cours\u202f!"),
         ("Run!", "Courez\u202f!"), ("Who?", "Qui\u202f?"), ("Wow!", "Ça alors\u202f!"),
         ("I lost.", "J'ai perdu."), ("He's calm.", "Il est calme."),
         ("I'm home.", "Je suis chez moi."), ("I'm calm.", "Je suis calme."),
         ("He lost.", "Il a perdu."), ("Go home.", "Va chez toi."),
         ("I'm lost.", "Je suis perdu."), ("He's home.", "Il est chez lui."),
         ("Who lost?", "Qui a perdu\u202f?"), ("Go, run!", "Va, cours\u202f!")]


def fra_eng_text(n_lines=96):
    """English-French pairs in the format of d2l's ``fra-eng/fra.txt`` (Tatoeba, via
    manythings.org): ``English<TAB>French`` per line, French with narrow no-break spaces
    before ``!`` and ``?``."""
    return "\n".join(f"{en}\t{fr}" for en, fr in
                     (PAIRS * (n_lines // len(PAIRS) + 1))[:n_lines]) + "\n"


@pytest.fixture
def data_dir(tmp_path, monkeypatch):
    """``../data`` (d2l's default root) holds ``timemachine.txt`` and ``fra-eng.zip``; the
    book's ``download`` is called with their own SHA-1, so that it finds them in its cache,
    and the network is refused."""
    (tmp_path / "work").mkdir()
    folder = tmp_path / "data"
    folder.mkdir()
    monkeypatch.chdir(tmp_path / "work")
    (folder / "timemachine.txt").write_text(time_machine_text())
    with zipfile.ZipFile(folder / "fra-eng.zip", "w") as z:
        z.writestr("fra-eng/fra.txt", fra_eng_text())
        z.writestr("fra-eng/_about.txt", "Synthetic pairs for the tests.\n")
    download = d2l.download

    def cached(url, folder='../data', sha1_hash=None):
        fname = os.path.join(folder, url.split('/')[-1])
        assert os.path.exists(fname), f"{fname} should have been written by the test"
        with open(fname, 'rb') as f:
            return download(url, folder, hashlib.sha1(f.read()).hexdigest())

    def no_network(*args, **kwargs):
        raise AssertionError("the test must not download anything")

    monkeypatch.setattr(d2l, "download", cached)
    monkeypatch.setattr(d2l.requests, "get", no_network)
    return folder


@pytest.fixture(autouse=True)
def _seeded():
    """The weights the book draws (``d2l.normal``, the layers' initializers) and the
    shuffling are the same at every run."""
    tf.random.set_seed(0)


def softmax_ce_np(logits, labels):
    """Mean softmax cross-entropy in NumPy (float64): ``logits`` (..., V), int ``labels`` (...)."""
    z = np.asarray(logits, np.float64).reshape(-1, logits.shape[-1])
    y = np.asarray(labels).reshape(-1)
    z = z - z.max(axis=1, keepdims=True)
    logp = z - np.log(np.exp(z).sum(axis=1, keepdims=True))
    return -logp[np.arange(len(y)), y]


# -- d2l 9.1 Working with sequences -----------------------------------------------------------

def test_d2l_9_1_sequence():
    class Data(d2l.DataModule):
        def __init__(self, batch_size=16, T=1000, num_train=600, tau=4):
            self.save_hyperparameters()
            self.time = d2l.arange(1, T + 1, dtype=d2l.float32)
            self.x = d2l.sin(0.01 * self.time) + d2l.normal([T]) * 0.2

    data = Data()
    d2l.plot(data.time, data.x, 'time', 'x', xlim=[1, 1000], figsize=(6, 3))

    @d2l.add_to_class(Data)
    def get_dataloader(self, train):
        features = [self.x[i : self.T-self.tau+i] for i in range(self.tau)]
        self.features = d2l.stack(features, 1)
        self.labels = d2l.reshape(self.x[self.tau:], (-1, 1))
        i = slice(0, self.num_train) if train else slice(self.num_train, None)
        return self.get_tensorloader([self.features, self.labels], train, i)

    model = d2l.LinearRegression(lr=0.01)
    trainer = d2l.Trainer(max_epochs=5)
    trainer.fit(model, data)

    x = data.x.numpy().astype(np.float64)
    assert data.time.dtype == tf.float32 and data.time.numpy()[[0, -1]].tolist() == [1, 1000]
    windows = np.stack([x[i:i + 996] for i in range(4)], 1)
    np.testing.assert_array_equal(data.features.numpy(), windows.astype(np.float32))
    np.testing.assert_array_equal(data.labels.numpy()[:, 0], x[4:].astype(np.float32))
    assert trainer.train_batch_idx == 5 * math.ceil(600 / 16)
    # the fit beats predicting 0 by far (x is sin(0.01 t) plus noise of variance 0.04)
    losses = [p.y for p in model.board.data["val_loss"]]
    assert losses[-1] < 0.5 * np.mean(x[600 + 4:] ** 2) / 2

    onestep_preds = d2l.numpy(model(data.features))
    d2l.plot(data.time[data.tau:], [data.labels, onestep_preds], 'time', 'x',
             legend=['labels', '1-step preds'], figsize=(6, 3))
    w, b = (np.asarray(a, np.float64) for a in model.get_w_b())
    w, b = w.reshape(4), float(np.reshape(b, ()))
    np.testing.assert_allclose(onestep_preds[:, 0], windows @ w + b, rtol=1e-5, atol=1e-6)

    multistep_preds = tf.Variable(d2l.zeros(data.T))
    multistep_preds[:].assign(data.x)
    for i in range(data.num_train + data.tau, data.T):
        multistep_preds[i].assign(d2l.reshape(model(
            d2l.reshape(multistep_preds[i-data.tau : i], (1, -1))), ()))

    d2l.plot([data.time[data.tau:], data.time[data.num_train+data.tau:]],
             [onestep_preds, multistep_preds[data.num_train+data.tau:]], 'time',
             'x', legend=['1-step preds', 'multistep preds'], figsize=(6, 3))
    expected = x.copy()  # the same recursion in NumPy
    for i in range(604, 1000):
        expected[i] = expected[i - 4:i] @ w + b
    np.testing.assert_allclose(multistep_preds.numpy(), expected, rtol=1e-4, atol=1e-5)

    def k_step_pred(k):
        features = []
        for i in range(data.tau):
            features.append(data.x[i : i+data.T-data.tau-k+1])
        # The (i+tau)-th element stores the (i+1)-step-ahead predictions
        for i in range(k):
            preds = model(d2l.stack(features[i : i+data.tau], 1))
            features.append(d2l.reshape(preds, -1))
        return features[data.tau:]

    steps = (1, 4, 16, 64)
    preds = k_step_pred(steps[-1])
    d2l.plot(data.time[data.tau+steps[-1]-1:],
             [d2l.numpy(preds[k-1]) for k in steps], 'time', 'x',
             legend=[f'{k}-step preds' for k in steps], figsize=(6, 3))
    assert len(preds) == 64 and all(p.shape == (1000 - 4 - 64 + 1,) for p in preds)
    cols = [x[i:i + 933] for i in range(4)]
    for k in range(64):
        cols.append(np.stack(cols[k:k + 4], 1) @ w + b)
        np.testing.assert_allclose(preds[k].numpy(), cols[-1], rtol=1e-4, atol=1e-5)


# -- d2l 9.2 Converting raw text into sequence data ------------------------------------------

def test_d2l_9_2_text_sequence(data_dir, capsys):
    import collections
    import re

    class TimeMachine(d2l.DataModule): #@save
        """The Time Machine dataset."""
        def _download(self):
            fname = d2l.download(d2l.DATA_URL + 'timemachine.txt', self.root,
                                 '090b5e7e70c295757f55df93cb0a180b9691891a')
            with open(fname) as f:
                return f.read()

    data = TimeMachine()
    raw_text = data._download()
    assert raw_text[:60] == time_machine_text()[:60]

    @d2l.add_to_class(TimeMachine)  #@save
    def _preprocess(self, text):
        return re.sub('[^A-Za-z]+', ' ', text).lower()

    text = data._preprocess(raw_text)
    assert text[:60].startswith('the time machine by h g wells ')
    assert set(text) <= set('abcdefghijklmnopqrstuvwxyz ') and '  ' not in text

    @d2l.add_to_class(TimeMachine)  #@save
    def _tokenize(self, text):
        return list(text)

    tokens = data._tokenize(text)
    assert ','.join(tokens[:30]).startswith('t,h,e, ,t,i,m,e, ,m,a,c,h,i,n,e')

    class Vocab:  #@save
        """Vocabulary for text."""
        def __init__(self, tokens=[], min_freq=0, reserved_tokens=[]):
            # Flatten a 2D list if needed
            if tokens and isinstance(tokens[0], list):
                tokens = [token for line in tokens for token in line]
            # Count token frequencies
            counter = collections.Counter(tokens)
            self.token_freqs = sorted(counter.items(), key=lambda x: x[1],
                                      reverse=True)
            # The list of unique tokens
            self.idx_to_token = list(sorted(set(['<unk>'] + reserved_tokens + [
                token for token, freq in self.token_freqs if freq >= min_freq])))
            self.token_to_idx = {token: idx
                                 for idx, token in enumerate(self.idx_to_token)}

        def __len__(self):
            return len(self.idx_to_token)

        def __getitem__(self, tokens):
            if not isinstance(tokens, (list, tuple)):
                return self.token_to_idx.get(tokens, self.unk)
            return [self.__getitem__(token) for token in tokens]

        def to_tokens(self, indices):
            if hasattr(indices, '__len__') and len(indices) > 1:
                return [self.idx_to_token[int(index)] for index in indices]
            return self.idx_to_token[indices]

        @property
        def unk(self):  # Index for the unknown token
            return self.token_to_idx['<unk>']

    vocab = Vocab(tokens)
    indices = vocab[tokens[:10]]
    print('indices:', indices)
    print('words:', vocab.to_tokens(indices))
    assert vocab.idx_to_token == sorted(set(tokens) | {'<unk>'})  # ' ' < '<unk>' < 'a'
    assert capsys.readouterr().out == (
        f"indices: {[vocab.idx_to_token.index(c) for c in 'the time m']}\n"
        "words: ['t', 'h', 'e', ' ', 't', 'i', 'm', 'e', ' ', 'm']\n")

    @d2l.add_to_class(TimeMachine)  #@save
    def build(self, raw_text, vocab=None):
        tokens = self._tokenize(self._preprocess(raw_text))
        if vocab is None: vocab = Vocab(tokens)
        corpus = [vocab[token] for token in tokens]
        return corpus, vocab

    corpus, vocab = data.build(raw_text)
    assert (len(corpus), len(vocab)) == (len(text), len(set(text)) + 1)

    words = text.split()
    vocab = Vocab(words)
    counts = collections.Counter(words)
    assert vocab.token_freqs[:10] == sorted(counts.items(), key=lambda x: x[1],
                                            reverse=True)[:10]

    freqs = [freq for token, freq in vocab.token_freqs]
    d2l.plot(freqs, xlabel='token: x', ylabel='frequency: n(x)',
             xscale='log', yscale='log')

    bigram_tokens = ['--'.join(pair) for pair in zip(words[:-1], words[1:])]
    bigram_vocab = Vocab(bigram_tokens)
    assert sum(f for _, f in bigram_vocab.token_freqs) == len(words) - 1
    assert bigram_vocab.token_freqs[0][1] == max(
        collections.Counter(zip(words[:-1], words[1:])).values())

    trigram_tokens = ['--'.join(triple) for triple in zip(
        words[:-2], words[1:-1], words[2:])]
    trigram_vocab = Vocab(trigram_tokens)
    assert sum(f for _, f in trigram_vocab.token_freqs) == len(words) - 2

    bigram_freqs = [freq for token, freq in bigram_vocab.token_freqs]
    trigram_freqs = [freq for token, freq in trigram_vocab.token_freqs]
    d2l.plot([freqs, bigram_freqs, trigram_freqs], xlabel='token: x',
             ylabel='frequency: n(x)', xscale='log', yscale='log',
             legend=['unigram', 'bigram', 'trigram'])
    axes = d2l.plt.gca()
    assert [t.get_text() for t in axes.get_legend().get_texts()] == [
        'unigram', 'bigram', 'trigram']
    assert axes.get_xscale() == axes.get_yscale() == 'log'


# -- d2l 9.3 Language models -----------------------------------------------------------------

def test_d2l_9_3_language_model(data_dir, capsys):
    @d2l.add_to_class(d2l.TimeMachine)  #@save
    def __init__(self, batch_size, num_steps, num_train=10000, num_val=5000):
        super(d2l.TimeMachine, self).__init__()
        self.save_hyperparameters()
        corpus, self.vocab = self.build(self._download())
        array = d2l.tensor([corpus[i:i+num_steps+1]
                            for i in range(len(corpus)-num_steps)])
        self.X, self.Y = array[:,:-1], array[:,1:]

    @d2l.add_to_class(d2l.TimeMachine)  #@save
    def get_dataloader(self, train):
        idx = slice(0, self.num_train) if train else slice(
            self.num_train, self.num_train + self.num_val)
        return self.get_tensorloader([self.X, self.Y], train, idx)

    data = d2l.TimeMachine(batch_size=2, num_steps=10)
    for X, Y in data.train_dataloader():
        print('X:', X, '\nY:', Y)
        break

    out = capsys.readouterr().out
    assert out == f'X: {X} \nY: {Y}\n' and out.endswith('shape=(2, 10), dtype=int32)\n')
    # Y is X shifted by one token, in the corpus
    corpus, _ = data.build(data._download())
    assert X.shape == Y.shape == (2, 10) and X.dtype == tf.int32
    for x, y in zip(X.numpy(), Y.numpy()):
        starts = [i for i in range(len(corpus) - 10) if corpus[i:i + 10] == list(x)]
        assert any(corpus[i + 1:i + 11] == list(y) for i in starts)
    assert data.X.shape == (len(corpus) - 10, 10)

    # Perplexity: exp of the mean negative log-likelihood; a uniform model's is the
    # vocabulary's size, a perfect one's is 1.
    V = len(data.vocab)
    uniform = d2l.Classifier.loss(None, tf.zeros((2, 10, V)), Y)
    assert math.isclose(float(d2l.exp(uniform)), V, rel_tol=1e-5)
    sure = tf.one_hot(Y, V) * 50.0
    assert math.isclose(float(d2l.exp(d2l.Classifier.loss(None, sure, Y))), 1, rel_tol=1e-5)


# -- d2l 9.4 Recurrent neural networks -------------------------------------------------------

def test_d2l_9_4_rnn():
    X, W_xh = d2l.normal((3, 1)), d2l.normal((1, 4))
    H, W_hh = d2l.normal((3, 4)), d2l.normal((4, 4))
    a = d2l.matmul(X, W_xh) + d2l.matmul(H, W_hh)

    b = d2l.matmul(d2l.concat((X, H), 1), d2l.concat((W_xh, W_hh), 0))
    assert a.shape == b.shape == (3, 4)
    np.testing.assert_allclose(a.numpy(), b.numpy(), rtol=1e-5, atol=1e-6)
    x, wx, h, wh = (np.asarray(t, np.float64) for t in (X, W_xh, H, W_hh))
    np.testing.assert_allclose(b.numpy(), x @ wx + h @ wh, rtol=1e-5, atol=1e-6)


# -- helpers: a language model's training step against NumPy --------------------------------

def check_lm_step(model, batch, loss_np, seed=0, rtol=1e-4):
    """The tape's gradient of ``model``'s loss on ``batch`` (``(X, Y)``), and d2l's clipping
    of it, against NumPy: ``loss_np(get)`` is the same loss written in NumPy (float64), with
    ``get(variable)`` the variable's value. The loss must agree, the gradient must agree with
    the central difference of ``loss_np`` along a random unit direction, and
    ``Trainer.clip_gradients(theta, grads)`` must scale the gradient by ``min(1, theta /
    norm)`` (norm in float64), for a ``theta`` below the norm and one above."""
    variables = model.trainable_variables
    assert variables
    with tf.GradientTape() as tape:
        l = model.loss(model(*batch[:-1]), batch[-1])
    grads = tape.gradient(l, variables)
    assert all(g is not None for g in grads)
    start = {id(v): v.numpy().astype(np.float64) for v in variables}
    assert math.isclose(float(l), loss_np(lambda v: start[id(v)]), rel_tol=1e-5)
    rng = np.random.default_rng(seed)
    direction = {id(v): rng.standard_normal(v.shape) for v in variables}
    norm = math.sqrt(sum(float(np.sum(d * d)) for d in direction.values()))
    direction = {k: d / norm for k, d in direction.items()}
    f = lambda t: loss_np(lambda v: start[id(v)] + t * direction[id(v)])
    eps = 1e-5
    numeric = (f(eps) - f(-eps)) / (2 * eps)
    dense = [np.asarray(tf.convert_to_tensor(g), np.float64) for g in grads]
    analytic = sum(float(np.sum(g * direction[id(v)])) for g, v in zip(dense, variables))
    assert math.isclose(analytic, numeric, rel_tol=rtol, abs_tol=1e-7), (analytic, numeric)
    grad_norm = math.sqrt(sum(float(np.sum(g * g)) for g in dense))
    for theta in (grad_norm / 2, 2 * grad_norm):
        clipped = d2l.Trainer.clip_gradients(None, theta, grads)
        factor = min(1.0, theta / grad_norm)
        for c, g in zip(clipped, dense):
            np.testing.assert_allclose(np.asarray(tf.convert_to_tensor(c)), g * factor,
                                       rtol=1e-5, atol=1e-9)
    return float(l)


def lm_loss_np(X, Y, V, step, H0, out):
    """A language model's mean cross-entropy in NumPy: one-hot inputs ``(steps, batch, V)``,
    ``H = step(x, H)`` at each step (``H`` a tuple of states), logits ``out(H[0])``."""
    embs = np.eye(V)[np.asarray(X).T]
    H, logits = H0, []
    for x in embs:
        H = step(x, H)
        logits.append(out(H[0]))
    return softmax_ce_np(np.stack(logits, 1), Y).mean()


def sigmoid_np(x):
    return 1 / (1 + np.exp(-x))


def greedy_np(prefix, num_preds, vocab, step, H0, out):
    """What ``RNNLMScratch.predict`` computes, in NumPy: warm up on ``prefix``, then append
    the most likely next character ``num_preds`` times."""
    V = len(vocab)
    H, outputs = H0, [vocab[prefix[0]]]
    for i in range(len(prefix) + num_preds - 1):
        H = step(np.eye(V)[[outputs[-1]]], H)
        outputs.append(vocab[prefix[i + 1]] if i < len(prefix) - 1 else
                       int(np.argmax(out(H[0]))))
    return ''.join(vocab.idx_to_token[i] for i in outputs)


def small_time_machine(batch_size=32, num_steps=8):
    """d2l's ``TimeMachine`` with a few hundred windows (the book: 10000 and 5000)."""
    return d2l.TimeMachine(batch_size=batch_size, num_steps=num_steps, num_train=256,
                           num_val=64)


# -- d2l 9.5 Recurrent neural network implementation from scratch ----------------------------

def test_d2l_9_5_rnn_scratch(data_dir):
    class RNNScratch(d2l.Module):  #@save
        """The RNN model implemented from scratch."""
        def __init__(self, num_inputs, num_hiddens, sigma=0.01):
            super().__init__()
            self.save_hyperparameters()
            self.W_xh = tf.Variable(d2l.normal(
                (num_inputs, num_hiddens)) * sigma)
            self.W_hh = tf.Variable(d2l.normal(
                (num_hiddens, num_hiddens)) * sigma)
            self.b_h = tf.Variable(d2l.zeros(num_hiddens))

    @d2l.add_to_class(RNNScratch)  #@save
    def forward(self, inputs, state=None):
        if state is None:
            # Initial state with shape: (batch_size, num_hiddens)
            state = d2l.zeros((inputs.shape[1], self.num_hiddens))
        else:
            state, = state
            state = d2l.reshape(state, (-1, self.num_hiddens))
        outputs = []
        for X in inputs:  # Shape of inputs: (num_steps, batch_size, num_inputs)
            state = d2l.tanh(d2l.matmul(X, self.W_xh) +
                             d2l.matmul(state, self.W_hh) + self.b_h)
            outputs.append(state)
        return outputs, state

    batch_size, num_inputs, num_hiddens, num_steps = 2, 16, 32, 100
    rnn = RNNScratch(num_inputs, num_hiddens)
    X = d2l.ones((num_steps, batch_size, num_inputs))
    outputs, state = rnn(X)

    def check_len(a, n):  #@save
        """Check the length of a list."""
        assert len(a) == n, f'list\'s length {len(a)} != expected length {n}'

    def check_shape(a, shape):  #@save
        """Check the shape of a tensor."""
        assert a.shape == shape, \
                f'tensor\'s shape {a.shape} != expected shape {shape}'

    check_len(outputs, num_steps)
    check_shape(outputs[0], (batch_size, num_hiddens))
    check_shape(state, (batch_size, num_hiddens))
    Wxh, Whh, bh = (v.numpy().astype(np.float64) for v in (rnn.W_xh, rnn.W_hh, rnn.b_h))
    h = np.zeros((batch_size, num_hiddens))
    for t in range(num_steps):
        h = np.tanh(np.ones((batch_size, num_inputs)) @ Wxh + h @ Whh + bh)
        np.testing.assert_allclose(outputs[t].numpy(), h, rtol=1e-5, atol=1e-7)

    class RNNLMScratch(d2l.Classifier):  #@save
        """The RNN-based language model implemented from scratch."""
        def __init__(self, rnn, vocab_size, lr=0.01):
            super().__init__()
            self.save_hyperparameters()
            self.init_params()

        def init_params(self):
            self.W_hq = tf.Variable(d2l.normal(
                (self.rnn.num_hiddens, self.vocab_size)) * self.rnn.sigma)
            self.b_q = tf.Variable(d2l.zeros(self.vocab_size))

        def training_step(self, batch):
            l = self.loss(self(*batch[:-1]), batch[-1])
            self.plot('ppl', d2l.exp(l), train=True)
            return l

        def validation_step(self, batch):
            l = self.loss(self(*batch[:-1]), batch[-1])
            self.plot('ppl', d2l.exp(l), train=False)

    one_hot = tf.one_hot(tf.constant([0, 2]), 5)
    np.testing.assert_array_equal(one_hot.numpy(), [[1, 0, 0, 0, 0], [0, 0, 1, 0, 0]])
    assert one_hot.dtype == tf.float32

    @d2l.add_to_class(RNNLMScratch)  #@save
    def one_hot(self, X):
        # Output shape: (num_steps, batch_size, vocab_size)
        return tf.one_hot(tf.transpose(X), self.vocab_size)

    @d2l.add_to_class(RNNLMScratch)  #@save
    def output_layer(self, rnn_outputs):
        outputs = [d2l.matmul(H, self.W_hq) + self.b_q for H in rnn_outputs]
        return d2l.stack(outputs, 1)

    @d2l.add_to_class(RNNLMScratch)  #@save
    def forward(self, X, state=None):
        embs = self.one_hot(X)
        rnn_outputs, _ = self.rnn(embs, state)
        return self.output_layer(rnn_outputs)

    model = RNNLMScratch(rnn, num_inputs)
    outputs = model(d2l.ones((batch_size, num_steps), dtype=d2l.int64))
    check_shape(outputs, (batch_size, num_steps, num_inputs))
    assert model.one_hot(tf.constant([[1, 2, 3]])).shape == (3, 1, num_inputs)

    @d2l.add_to_class(d2l.Trainer)  #@save
    def clip_gradients(self, grad_clip_val, grads):
        grad_clip_val = tf.constant(grad_clip_val, dtype=tf.float32)
        new_grads = [tf.convert_to_tensor(grad) if isinstance(
            grad, tf.IndexedSlices) else grad for grad in grads]
        norm = tf.math.sqrt(sum((tf.reduce_sum(grad ** 2)) for grad in new_grads))
        if tf.greater(norm, grad_clip_val):
            for i, grad in enumerate(new_grads):
                new_grads[i] = grad * grad_clip_val / norm
            return new_grads
        return grads

    data = small_time_machine()
    with d2l.try_gpu():
        rnn = RNNScratch(num_inputs=len(data.vocab), num_hiddens=16)
        model = RNNLMScratch(rnn, vocab_size=len(data.vocab), lr=1)
    trainer = d2l.Trainer(max_epochs=3, gradient_clip_val=1)
    trainer.fit(model, data)

    @d2l.add_to_class(RNNLMScratch)  #@save
    def predict(self, prefix, num_preds, vocab, device=None):
        state, outputs = None, [vocab[prefix[0]]]
        for i in range(len(prefix) + num_preds - 1):
            X = d2l.tensor([[outputs[-1]]])
            embs = self.one_hot(X)
            rnn_outputs, state = self.rnn(embs, state)
            if i < len(prefix) - 1:  # Warm-up period
                outputs.append(vocab[prefix[i + 1]])
            else:  # Predict num_preds steps
                Y = self.output_layer(rnn_outputs)
                outputs.append(int(d2l.reshape(d2l.argmax(Y, axis=2), 1)))
        return ''.join([vocab.idx_to_token[i] for i in outputs])

    prediction = model.predict('it has', 20, data.vocab)

    # perplexity on the board: exp of the loss; training lowered it below the vocabulary's size
    V = len(data.vocab)
    ppl = [p.y for p in model.board.data['val_ppl']]
    assert len(ppl) == 3 and ppl[-1] < 0.8 * V
    # the training step and the prediction, in NumPy
    get = lambda v: v.numpy().astype(np.float64)
    step = lambda x, H, g=get: (np.tanh(x @ g(rnn.W_xh) + H[0] @ g(rnn.W_hh) + g(rnn.b_h)),)
    out = lambda h, g=get: h @ g(model.W_hq) + g(model.b_q)
    assert prediction == greedy_np('it has', 20, data.vocab, step, (np.zeros((1, 16)),), out)
    X, Y = next(iter(data.train_dataloader()))
    check_lm_step(model, (X, Y), lambda g: lm_loss_np(
        X, Y, V, lambda x, H: step(x, H, g), (np.zeros((32, 16)),),
        lambda h: out(h, g)))


# -- d2l 9.6 Concise implementation of recurrent neural networks -----------------------------

def keras_rnn_step(cell, get=lambda v: v.numpy().astype(np.float64)):
    """One step of Keras's ``SimpleRNNCell`` in NumPy (weights ``kernel``,
    ``recurrent_kernel``, ``bias``, as Keras lays them out)."""
    return lambda x, H: (np.tanh(x @ get(cell.kernel) + H[0] @ get(cell.recurrent_kernel)
                                 + get(cell.bias)),)


def dense_np(layer, get=lambda v: v.numpy().astype(np.float64)):
    return lambda h: h @ get(layer.kernel) + get(layer.bias)


def test_d2l_9_6_rnn_concise(data_dir):
    class RNN(d2l.Module):  #@save
        """The RNN model implemented with high-level APIs."""
        def __init__(self, num_hiddens):
            super().__init__()
            self.save_hyperparameters()
            self.rnn = tf.keras.layers.SimpleRNN(
                num_hiddens, return_sequences=True, return_state=True,
                time_major=True)

        def forward(self, inputs, H=None):
            outputs, H = self.rnn(inputs, H)
            return outputs, H

    class RNNLM(d2l.RNNLMScratch):  #@save
        """The RNN-based language model implemented with high-level APIs."""
        def init_params(self):
            self.linear = tf.keras.layers.Dense(self.vocab_size)

        def output_layer(self, hiddens):
            return d2l.transpose(self.linear(hiddens), (1, 0, 2))

    data = small_time_machine()
    rnn = RNN(num_hiddens=16)
    model = RNNLM(rnn, vocab_size=len(data.vocab), lr=1)
    untrained = model.predict('it has', 20, data.vocab)

    cell = rnn.rnn.cell
    V = len(data.vocab)
    assert cell.kernel.shape == (V, 16) and cell.recurrent_kernel.shape == (16, 16)
    assert untrained == greedy_np('it has', 20, data.vocab, keras_rnn_step(cell),
                                  (np.zeros((1, 16)),), dense_np(model.linear))

    with d2l.try_gpu():
        trainer = d2l.Trainer(max_epochs=3, gradient_clip_val=1)
    trainer.fit(model, data)

    prediction = model.predict('it has', 20, data.vocab)
    assert prediction == greedy_np('it has', 20, data.vocab, keras_rnn_step(cell),
                                   (np.zeros((1, 16)),), dense_np(model.linear))
    ppl = [p.y for p in model.board.data['val_ppl']]
    assert len(ppl) == 3 and ppl[-1] < 0.8 * V
    X, Y = next(iter(data.train_dataloader()))
    check_lm_step(model, (X, Y), lambda g: lm_loss_np(
        X, Y, V, keras_rnn_step(cell, g), (np.zeros((32, 16)),), dense_np(model.linear, g)))



# -- d2l 9.7 Backpropagation through time ----------------------------------------------------

def test_d2l_9_7_bptt():
    """The section has no code: its equations. Its RNN (no biases, identity activation, one
    example as column vectors), h_t = W_hx x_t + W_hh h_{t-1}, o_t = W_qh h_t, L = (1/T)
    sum_t l(o_t, y_t) with l the softmax cross-entropy; the tape's gradients must be the
    section's closed forms, and detaching the state (``tf.stop_gradient``) truncates the
    sums as the section says."""
    d, h, q, T = 3, 4, 5, 6
    rng = np.random.default_rng(7)
    W_hx, W_hh, W_qh = (tf.Variable(rng.standard_normal(s) * 0.5)
                        for s in ((h, d), (h, h), (q, h)))
    xs = [tf.constant(rng.standard_normal((d, 1))) for _ in range(T)]
    ys = rng.integers(0, q, T)

    def run(detach_after=None):
        with tf.GradientTape(persistent=True) as tape:
            H, hs, os_, L = tf.zeros((h, 1), tf.float64), [], [], 0.0
            for t in range(T):
                H = tf.matmul(W_hx, xs[t]) + tf.matmul(W_hh, H)
                hs.append(H)
                o = tf.matmul(W_qh, H)
                os_.append(o)
                L = L + tf.nn.sparse_softmax_cross_entropy_with_logits(
                    ys[t:t + 1], tf.transpose(o))[0] / T
                if detach_after == t + 1:
                    H = tf.stop_gradient(H)
        grads = tape.gradient(L, [W_hx, W_hh, W_qh])
        dh = tape.gradient(L, hs)
        return [np.asarray(g) for g in grads], [np.asarray(g) for g in dh], hs, os_

    grads, dh, hs, os_ = run()
    Whh, Wqh = W_hh.numpy(), W_qh.numpy()
    hs = [H.numpy() for H in hs]
    x = [v.numpy() for v in xs]

    def dL_do(t):   # (softmax(o_t) - onehot(y_t)) / T
        o = os_[t].numpy()[:, 0]
        p = np.exp(o - o.max())
        return ((p / p.sum()) - np.eye(q)[ys[t]])[:, None] / T

    power = np.linalg.matrix_power
    # dL/dh_t = sum_{i=t}^{T} (W_hh^T)^{T-i} W_qh^T dL/do_{T+t-i}  (time steps from 1)
    closed = [sum(power(Whh.T, T - i) @ Wqh.T @ dL_do(T + t - i - 1) for i in range(t, T + 1))
              for t in range(1, T + 1)]
    for t in range(T):
        np.testing.assert_allclose(dh[t], closed[t], rtol=1e-10, atol=1e-13)
    np.testing.assert_allclose(grads[2], sum(dL_do(t) @ hs[t].T for t in range(T)),
                               rtol=1e-10, atol=1e-13)
    np.testing.assert_allclose(grads[0], sum(closed[t] @ x[t].T for t in range(T)),
                               rtol=1e-10, atol=1e-13)
    h_prev = [np.zeros((h, 1))] + hs[:-1]
    np.testing.assert_allclose(grads[1], sum(closed[t] @ h_prev[t].T for t in range(T)),
                               rtol=1e-10, atol=1e-13)

    # Truncated after step k: the states up to k only see the losses up to k.
    k = 3
    grads_k, dh_k, _, _ = run(detach_after=k)
    end = lambda t: k if t <= k else T
    truncated = [sum(power(Whh.T, s - t) @ Wqh.T @ dL_do(s - 1) for s in range(t, end(t) + 1))
                 for t in range(1, T + 1)]
    for t in range(T):
        np.testing.assert_allclose(dh_k[t], truncated[t], rtol=1e-10, atol=1e-13)
    # (W_hh still gets h_{k+1}'s term dL/dh_{k+1} h_k^T: only the path into h_k is cut)
    np.testing.assert_allclose(grads_k[1], sum(truncated[t] @ h_prev[t].T for t in range(T)),
                               rtol=1e-10, atol=1e-13)
    assert not np.allclose(grads_k[1], grads[1])

# -- d2l 10.1 Long short-term memory (LSTM) --------------------------------------------------

def keras_lstm_step(cell, get=lambda v: v.numpy().astype(np.float64)):
    """One step of Keras's ``LSTMCell`` in NumPy: gates i, f, c, o side by side."""
    def step(x, H):
        h, c = H
        z = x @ get(cell.kernel) + h @ get(cell.recurrent_kernel) + get(cell.bias)
        i, f, g, o = np.split(z, 4, axis=-1)
        c = sigmoid_np(f) * c + sigmoid_np(i) * np.tanh(g)
        return sigmoid_np(o) * np.tanh(c), c
    return step


def test_d2l_10_1_lstm(data_dir):
    class LSTMScratch(d2l.Module):
        def __init__(self, num_inputs, num_hiddens, sigma=0.01):
            super().__init__()
            self.save_hyperparameters()

            init_weight = lambda *shape: tf.Variable(d2l.normal(shape) * sigma)
            triple = lambda: (init_weight(num_inputs, num_hiddens),
                              init_weight(num_hiddens, num_hiddens),
                              tf.Variable(d2l.zeros(num_hiddens)))

            self.W_xi, self.W_hi, self.b_i = triple()  # Input gate
            self.W_xf, self.W_hf, self.b_f = triple()  # Forget gate
            self.W_xo, self.W_ho, self.b_o = triple()  # Output gate
            self.W_xc, self.W_hc, self.b_c = triple()  # Input node

    @d2l.add_to_class(LSTMScratch)
    def forward(self, inputs, H_C=None):
        if H_C is None:
            # Initial state with shape: (batch_size, num_hiddens)
            H = d2l.zeros((inputs.shape[1], self.num_hiddens))
            C = d2l.zeros((inputs.shape[1], self.num_hiddens))
        else:
            H, C = H_C
        outputs = []
        for X in inputs:
            I = d2l.sigmoid(d2l.matmul(X, self.W_xi) +
                            d2l.matmul(H, self.W_hi) + self.b_i)
            F = d2l.sigmoid(d2l.matmul(X, self.W_xf) +
                            d2l.matmul(H, self.W_hf) + self.b_f)
            O = d2l.sigmoid(d2l.matmul(X, self.W_xo) +
                            d2l.matmul(H, self.W_ho) + self.b_o)
            C_tilde = d2l.tanh(d2l.matmul(X, self.W_xc) +
                               d2l.matmul(H, self.W_hc) + self.b_c)
            C = F * C + I * C_tilde
            H = O * d2l.tanh(C)
            outputs.append(H)
        return outputs, (H, C)

    data = small_time_machine()
    with d2l.try_gpu():
        lstm = LSTMScratch(num_inputs=len(data.vocab), num_hiddens=16)
        model = d2l.RNNLMScratch(lstm, vocab_size=len(data.vocab), lr=4)
    trainer = d2l.Trainer(max_epochs=2, gradient_clip_val=1)
    trainer.fit(model, data)

    V = len(data.vocab)
    assert len(model.trainable_variables) == 12 + 2

    def scratch_step(g):
        def step(x, H):
            h, c = H
            gate = lambda Wx, Wh, b: x @ g(Wx) + h @ g(Wh) + g(b)
            i = sigmoid_np(gate(lstm.W_xi, lstm.W_hi, lstm.b_i))
            f = sigmoid_np(gate(lstm.W_xf, lstm.W_hf, lstm.b_f))
            o = sigmoid_np(gate(lstm.W_xo, lstm.W_ho, lstm.b_o))
            c = f * c + i * np.tanh(gate(lstm.W_xc, lstm.W_hc, lstm.b_c))
            return o * np.tanh(c), c
        return step

    X, Y = next(iter(data.train_dataloader()))
    zeros = (np.zeros((32, 16)), np.zeros((32, 16)))
    check_lm_step(model, (X, Y), lambda g: lm_loss_np(
        X, Y, V, scratch_step(g), zeros, lambda h: h @ g(model.W_hq) + g(model.b_q)))

    class LSTM(d2l.RNN):
        def __init__(self, num_hiddens):
            d2l.Module.__init__(self)
            self.save_hyperparameters()
            self.rnn = tf.keras.layers.LSTM(
                    num_hiddens, return_sequences=True,
                    return_state=True, time_major=True)

        def forward(self, inputs, H_C=None):
            outputs, *H_C = self.rnn(inputs, H_C)
            return outputs, H_C

    lstm = LSTM(num_hiddens=16)
    with d2l.try_gpu():
        model = d2l.RNNLM(lstm, vocab_size=len(data.vocab), lr=4)
    trainer.fit(model, data)

    prediction = model.predict('it has', 20, data.vocab)

    cell = lstm.rnn.cell
    assert cell.kernel.shape == (V, 64) and cell.recurrent_kernel.shape == (16, 64)
    h0 = (np.zeros((1, 16)), np.zeros((1, 16)))
    assert prediction == greedy_np('it has', 20, data.vocab, keras_lstm_step(cell), h0,
                                   dense_np(model.linear))
    ppl = [p.y for p in model.board.data['val_ppl']]
    assert len(ppl) == 2 and ppl[-1] < 0.8 * V
    check_lm_step(model, (X, Y), lambda g: lm_loss_np(
        X, Y, V, keras_lstm_step(cell, g), zeros, dense_np(model.linear, g)))


# -- d2l 10.2 Gated recurrent units (GRU) ----------------------------------------------------

def keras_gru_step(cell, get=lambda v: v.numpy().astype(np.float64)):
    """One step of Keras's ``GRUCell`` (``reset_after=True``, its default) in NumPy: gates z,
    r, h side by side, bias row 0 for the input, row 1 for the recurrent state."""
    def step(x, H):
        h, = H
        b = get(cell.bias)
        xz, xr, xh = np.split(x @ get(cell.kernel) + b[0], 3, axis=-1)
        hz, hr, hh = np.split(h @ get(cell.recurrent_kernel) + b[1], 3, axis=-1)
        z, r = sigmoid_np(xz + hz), sigmoid_np(xr + hr)
        return (z * h + (1 - z) * np.tanh(xh + r * hh),)
    return step


def test_d2l_10_2_gru(data_dir):
    class GRUScratch(d2l.Module):
        def __init__(self, num_inputs, num_hiddens, sigma=0.01):
            super().__init__()
            self.save_hyperparameters()

            init_weight = lambda *shape: tf.Variable(d2l.normal(shape) * sigma)
            triple = lambda: (init_weight(num_inputs, num_hiddens),
                              init_weight(num_hiddens, num_hiddens),
                              tf.Variable(d2l.zeros(num_hiddens)))

            self.W_xz, self.W_hz, self.b_z = triple()  # Update gate
            self.W_xr, self.W_hr, self.b_r = triple()  # Reset gate
            self.W_xh, self.W_hh, self.b_h = triple()  # Candidate hidden state

    @d2l.add_to_class(GRUScratch)
    def forward(self, inputs, H=None):
        if H is None:
            # Initial state with shape: (batch_size, num_hiddens)
            H = d2l.zeros((inputs.shape[1], self.num_hiddens))
        outputs = []
        for X in inputs:
            Z = d2l.sigmoid(d2l.matmul(X, self.W_xz) +
                            d2l.matmul(H, self.W_hz) + self.b_z)
            R = d2l.sigmoid(d2l.matmul(X, self.W_xr) +
                            d2l.matmul(H, self.W_hr) + self.b_r)
            H_tilde = d2l.tanh(d2l.matmul(X, self.W_xh) +
                               d2l.matmul(R * H, self.W_hh) + self.b_h)
            H = Z * H + (1 - Z) * H_tilde
            outputs.append(H)
        return outputs, H

    data = small_time_machine()
    with d2l.try_gpu():
        gru = GRUScratch(num_inputs=len(data.vocab), num_hiddens=16)
        model = d2l.RNNLMScratch(gru, vocab_size=len(data.vocab), lr=4)
    trainer = d2l.Trainer(max_epochs=2, gradient_clip_val=1)
    trainer.fit(model, data)

    V = len(data.vocab)

    def scratch_step(g):
        def step(x, H):
            h, = H
            gate = lambda Wx, Wh, b, h=h: x @ g(Wx) + h @ g(Wh) + g(b)
            z = sigmoid_np(gate(gru.W_xz, gru.W_hz, gru.b_z))
            r = sigmoid_np(gate(gru.W_xr, gru.W_hr, gru.b_r))
            h_tilde = np.tanh(gate(gru.W_xh, gru.W_hh, gru.b_h, r * h))
            return (z * h + (1 - z) * h_tilde,)
        return step

    X, Y = next(iter(data.train_dataloader()))
    check_lm_step(model, (X, Y), lambda g: lm_loss_np(
        X, Y, V, scratch_step(g), (np.zeros((32, 16)),),
        lambda h: h @ g(model.W_hq) + g(model.b_q)))
    assert model.predict('it has', 20, data.vocab) == greedy_np(
        'it has', 20, data.vocab, scratch_step(lambda v: v.numpy().astype(np.float64)),
        (np.zeros((1, 16)),), lambda h: h @ model.W_hq.numpy() + model.b_q.numpy())

    class GRU(d2l.RNN):
        def __init__(self, num_inputs, num_hiddens):
            d2l.Module.__init__(self)
            self.save_hyperparameters()
            self.rnn = tf.keras.layers.GRU(num_hiddens, return_sequences=True,
                                           return_state=True)

    gru = GRU(num_inputs=len(data.vocab), num_hiddens=16)
    with d2l.try_gpu():
        model = d2l.RNNLM(gru, vocab_size=len(data.vocab), lr=4)
    trainer.fit(model, data)

    prediction = model.predict('it has', 20, data.vocab)

    # This GRU is not time-major (unlike d2l's RNN and LSTM): it reads the book's
    # (num_steps, batch_size, vocab_size) inputs as (batch, time, features), so that its
    # recurrence runs along the batch axis, as it does in TensorFlow. The NumPy replay does
    # the same: the steps of the recurrence are the columns of X.
    cell = gru.rnn.cell
    assert cell.bias.shape == (2, 48)

    def batch_major_loss(g):
        embs = np.eye(V)[np.asarray(X).T]       # (num_steps, batch, V), as the book's
        step, H, hs = keras_gru_step(cell, g), (np.zeros((embs.shape[0], 16)),), []
        for t in range(embs.shape[1]):
            H = step(embs[:, t], H)
            hs.append(H[0])
        logits = dense_np(model.linear, g)(np.stack(hs, 0))   # (batch, num_steps, V)
        return softmax_ce_np(logits, Y).mean()

    check_lm_step(model, (X, Y), batch_major_loss)
    # one token at a time (predict), the two readings agree
    assert prediction == greedy_np('it has', 20, data.vocab, keras_gru_step(cell),
                                   (np.zeros((1, 16)),), dense_np(model.linear))


# -- d2l 10.3 Deep recurrent neural networks -------------------------------------------------

def test_d2l_10_3_deep_rnn(data_dir):
    class StackedRNNScratch(d2l.Module):
        def __init__(self, num_inputs, num_hiddens, num_layers, sigma=0.01):
            super().__init__()
            self.save_hyperparameters()
            self.rnns = [d2l.RNNScratch(num_inputs if i==0 else num_hiddens,
                                        num_hiddens, sigma)
                         for i in range(num_layers)]

    @d2l.add_to_class(StackedRNNScratch)
    def forward(self, inputs, Hs=None):
        outputs = inputs
        if Hs is None: Hs = [None] * self.num_layers
        for i in range(self.num_layers):
            outputs, Hs[i] = self.rnns[i](outputs, Hs[i])
            outputs = d2l.stack(outputs, 0)
        return outputs, Hs

    data = small_time_machine()
    with d2l.try_gpu():
        rnn_block = StackedRNNScratch(num_inputs=len(data.vocab),
                                  num_hiddens=16, num_layers=2)
        model = d2l.RNNLMScratch(rnn_block, vocab_size=len(data.vocab), lr=2)
    trainer = d2l.Trainer(max_epochs=2, gradient_clip_val=1)
    trainer.fit(model, data)

    V = len(data.vocab)
    assert len(model.trainable_variables) == 2 * 3 + 2

    def stacked_step(g):
        def step(x, H):
            out = []
            for rnn, h in zip(rnn_block.rnns, H):
                x = np.tanh(x @ g(rnn.W_xh) + h @ g(rnn.W_hh) + g(rnn.b_h))
                out.append(x)
            return out[::-1]          # the top layer's state first (the one read out)
        return step

    X, Y = next(iter(data.train_dataloader()))
    check_lm_step(model, (X, Y), lambda g: (lambda s: lm_loss_np(
        X, Y, V, lambda x, H: s(x, H[::-1]), [np.zeros((32, 16))] * 2,
        lambda h: h @ g(model.W_hq) + g(model.b_q)))(stacked_step(g)))
    # (predict: the states come back as a list, one (1, 16) per layer, and go in again)
    get = lambda v: v.numpy().astype(np.float64)
    assert model.predict('it has', 20, data.vocab) == greedy_np(
        'it has', 20, data.vocab, lambda x, H: stacked_step(get)(x, H[::-1]),
        [np.zeros((1, 16))] * 2, lambda h: h @ get(model.W_hq) + get(model.b_q))

    class GRU(d2l.RNN):  #@save
        """The multilayer GRU model."""
        def __init__(self, num_hiddens, num_layers, dropout=0):
            d2l.Module.__init__(self)
            self.save_hyperparameters()
            gru_cells = [tf.keras.layers.GRUCell(num_hiddens, dropout=dropout)
                         for _ in range(num_layers)]
            self.rnn = tf.keras.layers.RNN(gru_cells, return_sequences=True,
                                           return_state=True, time_major=True)

        def forward(self, X, state=None):
            outputs, *state = self.rnn(X, state)
            return outputs, state

    gru = GRU(num_hiddens=16, num_layers=2)
    with d2l.try_gpu():
        model = d2l.RNNLM(gru, vocab_size=len(data.vocab), lr=2)
    trainer.fit(model, data)

    prediction = model.predict('it has', 20, data.vocab)

    cells = gru.rnn.cell.cells

    def keras_stacked(g):
        steps = [keras_gru_step(c, g) for c in cells]

        def step(x, H):
            out = []
            for s, h in zip(steps, H[::-1]):
                x, = s(x, (h,))
                out.append(x)
            return out[::-1]
        return step

    check_lm_step(model, (X, Y), lambda g: lm_loss_np(
        X, Y, V, keras_stacked(g), [np.zeros((32, 16))] * 2, dense_np(model.linear, g)))
    assert prediction == greedy_np('it has', 20, data.vocab, keras_stacked(get),
                                   [np.zeros((1, 16))] * 2, dense_np(model.linear))


# -- d2l 10.4 Bidirectional recurrent neural networks ----------------------------------------

def test_d2l_10_4_bi_rnn():
    class BiRNNScratch(d2l.Module):
        def __init__(self, num_inputs, num_hiddens, sigma=0.01):
            super().__init__()
            self.save_hyperparameters()
            self.f_rnn = d2l.RNNScratch(num_inputs, num_hiddens, sigma)
            self.b_rnn = d2l.RNNScratch(num_inputs, num_hiddens, sigma)
            self.num_hiddens *= 2  # The output dimension will be doubled

    @d2l.add_to_class(BiRNNScratch)
    def forward(self, inputs, Hs=None):
        f_H, b_H = Hs if Hs is not None else (None, None)
        f_outputs, f_H = self.f_rnn(inputs, f_H)
        b_outputs, b_H = self.b_rnn(reversed(inputs), b_H)
        outputs = [d2l.concat((f, b), -1) for f, b in zip(
            f_outputs, reversed(b_outputs))]
        return outputs, (f_H, b_H)

    birnn = BiRNNScratch(num_inputs=5, num_hiddens=4, sigma=0.5)
    X = d2l.normal((7, 3, 5))
    # The TensorFlow tab never calls it. Without states it fails in TensorFlow too: a Tensor
    # has no ``__reversed__`` (PyTorch's has, the book's code comes from there), so
    # ``reversed(inputs)`` is Python's reverse iterator over the rows, which has no shape.
    assert not hasattr(tf.Tensor, '__reversed__')
    with pytest.raises(AttributeError, match="'reversed' object has no attribute 'shape'"):
        birnn(X)
    # With initial states (as ``RNNScratch`` takes them: ``state, = state``) it runs.
    Hs = ([d2l.zeros((3, 4))], [d2l.zeros((3, 4))])
    outputs, (f_H, b_H) = birnn(X, Hs)
    assert birnn.num_hiddens == 8 and len(outputs) == 7
    assert outputs[0].shape == (3, 8) and f_H.shape == b_H.shape == (3, 4)
    x = X.numpy().astype(np.float64)

    def run(rnn, xs):
        W_xh, W_hh, b_h = (v.numpy().astype(np.float64) for v in (rnn.W_xh, rnn.W_hh, rnn.b_h))
        h, hs = np.zeros((3, 4)), []
        for x_t in xs:
            h = np.tanh(x_t @ W_xh + h @ W_hh + b_h)
            hs.append(h)
        return hs

    f, b = run(birnn.f_rnn, x), run(birnn.b_rnn, x[::-1])[::-1]
    for t in range(7):   # step t: the forward RNN has read x_0..x_t, the backward x_t..x_6
        np.testing.assert_allclose(outputs[t].numpy(), np.concatenate([f[t], b[t]], -1),
                                   rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(b_H.numpy(), b[0], rtol=1e-5, atol=1e-6)
    # the gradient of a loss of every output, against finite differences in NumPy
    variables = birnn.trainable_variables
    assert len(variables) == 6
    with tf.GradientTape() as tape:
        outputs, _ = birnn(X, Hs)
        loss = d2l.reduce_sum(d2l.stack(outputs, 0) ** 2)
    grads = tape.gradient(loss, variables)
    start = {id(v): v.numpy().astype(np.float64) for v in variables}
    rng = np.random.default_rng(3)
    direction = {id(v): rng.standard_normal(v.shape) / 5 for v in variables}

    def loss_np(t):
        def run_t(rnn, xs):
            W_xh, W_hh, b_h = (start[id(v)] + t * direction[id(v)]
                               for v in (rnn.W_xh, rnn.W_hh, rnn.b_h))
            h, total = np.zeros((3, 4)), 0.0
            for x_t in xs:
                h = np.tanh(x_t @ W_xh + h @ W_hh + b_h)
                total += np.sum(h ** 2)
            return total
        return run_t(birnn.f_rnn, x) + run_t(birnn.b_rnn, x[::-1])

    numeric = (loss_np(1e-5) - loss_np(-1e-5)) / 2e-5
    analytic = sum(float(np.sum(np.asarray(g, np.float64) * direction[id(v)]))
                   for g, v in zip(grads, variables))
    assert math.isclose(analytic, numeric, rel_tol=1e-4), (analytic, numeric)


# -- d2l 10.5 Machine translation and the dataset --------------------------------------------

def test_d2l_10_5_machine_translation_and_dataset(data_dir, capsys):
    class MTFraEng(d2l.DataModule):  #@save
        """The English-French dataset."""
        def _download(self):
            d2l.extract(d2l.download(
                d2l.DATA_URL+'fra-eng.zip', self.root,
                '94646ad1522d915e7b0f9296181140edcf86a4f5'))
            with open(self.root + '/fra-eng/fra.txt', encoding='utf-8') as f:
                return f.read()

    data = MTFraEng()
    raw_text = data._download()
    print(raw_text[:75])
    assert capsys.readouterr().out == fra_eng_text()[:75] + "\n"
    assert raw_text.startswith("Go.\tVa\u202f!\nHi.\tSalut\u202f!\n")

    @d2l.add_to_class(MTFraEng)  #@save
    def _preprocess(self, text):
        # Replace non-breaking space with space
        text = text.replace('\u202f', ' ').replace('\xa0', ' ')
        # Insert space between words and punctuation marks
        no_space = lambda char, prev_char: char in ',.!?' and prev_char != ' '
        out = [' ' + char if i > 0 and no_space(char, text[i - 1]) else char
               for i, char in enumerate(text.lower())]
        return ''.join(out)

    text = data._preprocess(raw_text)
    print(text[:80])
    assert capsys.readouterr().out.startswith(
        "go .\tva !\nhi .\tsalut !\nrun !\tcours !\nrun !\tcourez !\nwho ?\tqui ?\n")

    @d2l.add_to_class(MTFraEng)  #@save
    def _tokenize(self, text, max_examples=None):
        src, tgt = [], []
        for i, line in enumerate(text.split('\n')):
            if max_examples and i > max_examples: break
            parts = line.split('\t')
            if len(parts) == 2:
                # Skip empty tokens
                src.append([t for t in f'{parts[0]} <eos>'.split(' ') if t])
                tgt.append([t for t in f'{parts[1]} <eos>'.split(' ') if t])
        return src, tgt

    src, tgt = data._tokenize(text)
    assert (src[:6], tgt[:6]) == (
        [['go', '.', '<eos>'], ['hi', '.', '<eos>'], ['run', '!', '<eos>'],
         ['run', '!', '<eos>'], ['who', '?', '<eos>'], ['wow', '!', '<eos>']],
        [['va', '!', '<eos>'], ['salut', '!', '<eos>'], ['cours', '!', '<eos>'],
         ['courez', '!', '<eos>'], ['qui', '?', '<eos>'], ['ça', 'alors', '!', '<eos>']])
    assert len(src) == len(tgt) == 96

    #@save
    def show_list_len_pair_hist(legend, xlabel, ylabel, xlist, ylist):
        """Plot the histogram for list length pairs."""
        d2l.set_figsize()
        _, _, patches = d2l.plt.hist(
            [[len(l) for l in xlist], [len(l) for l in ylist]])
        d2l.plt.xlabel(xlabel)
        d2l.plt.ylabel(ylabel)
        for patch in patches[1].patches:
            patch.set_hatch('/')
        d2l.plt.legend(legend)

    show_list_len_pair_hist(['source', 'target'], '# tokens per sequence',
                            'count', src, tgt)
    axes = d2l.plt.gca()
    assert axes.get_xlabel() == '# tokens per sequence' and axes.get_ylabel() == 'count'
    heights = [[p.get_height() for p in c] for c in axes.containers]
    assert [sum(h) for h in heights] == [96, 96]

    @d2l.add_to_class(MTFraEng)  #@save
    def __init__(self, batch_size, num_steps=9, num_train=512, num_val=128):
        super(MTFraEng, self).__init__()
        self.save_hyperparameters()
        self.arrays, self.src_vocab, self.tgt_vocab = self._build_arrays(
            self._download())

    @d2l.add_to_class(MTFraEng)  #@save
    def _build_arrays(self, raw_text, src_vocab=None, tgt_vocab=None):
        def _build_array(sentences, vocab, is_tgt=False):
            pad_or_trim = lambda seq, t: (
                seq[:t] if len(seq) > t else seq + ['<pad>'] * (t - len(seq)))
            sentences = [pad_or_trim(s, self.num_steps) for s in sentences]
            if is_tgt:
                sentences = [['<bos>'] + s for s in sentences]
            if vocab is None:
                vocab = d2l.Vocab(sentences, min_freq=2)
            array = d2l.tensor([vocab[s] for s in sentences])
            valid_len = d2l.reduce_sum(
                d2l.astype(array != vocab['<pad>'], d2l.int32), 1)
            return array, vocab, valid_len
        src, tgt = self._tokenize(self._preprocess(raw_text),
                                  self.num_train + self.num_val)
        src_array, src_vocab, src_valid_len = _build_array(src, src_vocab)
        tgt_array, tgt_vocab, _ = _build_array(tgt, tgt_vocab, True)
        return ((src_array, tgt_array[:,:-1], src_valid_len, tgt_array[:,1:]),
                src_vocab, tgt_vocab)

    @d2l.add_to_class(MTFraEng)  #@save
    def get_dataloader(self, train):
        idx = slice(0, self.num_train) if train else slice(self.num_train, None)
        return self.get_tensorloader(self.arrays, train, idx)

    data = MTFraEng(batch_size=3)
    src, tgt, src_valid_len, label = next(iter(data.train_dataloader()))
    print('source:', d2l.astype(src, d2l.int32))
    print('decoder input:', d2l.astype(tgt, d2l.int32))
    print('source len excluding pad:', d2l.astype(src_valid_len, d2l.int32))
    print('label:', d2l.astype(label, d2l.int32))

    assert capsys.readouterr().out == (
        f"source: {src}\ndecoder input: {tgt}\nsource len excluding pad: {src_valid_len}\n"
        f"label: {label}\n")
    assert src.shape == tgt.shape == label.shape == (3, 9) and src_valid_len.shape == (3,)
    # each row is one of the pairs, padded; the decoder input is <bos> and the label shifted
    sv, tv = data.src_vocab, data.tgt_vocab
    pairs = {(' '.join(e), ' '.join(f)) for e, f in zip(*data._tokenize(
        data._preprocess(raw_text)))}
    pad = lambda s: [t for t in s if t != '<pad>']
    for s, t, n, y in zip(src.numpy(), tgt.numpy(), src_valid_len.numpy(), label.numpy()):
        en, fr = pad(sv.to_tokens(list(s))), pad(tv.to_tokens(list(y)))
        assert (' '.join(en), ' '.join(fr)) in pairs and n == len(en)
        assert t[0] == tv['<bos>'] and list(t[1:]) == list(y[:-1])

    @d2l.add_to_class(MTFraEng)  #@save
    def build(self, src_sentences, tgt_sentences):
        raw_text = '\n'.join([src + '\t' + tgt for src, tgt in zip(
            src_sentences, tgt_sentences)])
        arrays, _, _ = self._build_arrays(
            raw_text, self.src_vocab, self.tgt_vocab)
        return arrays

    src, tgt, _,  _ = data.build(['hi .'], ['salut .'])
    print('source:', data.src_vocab.to_tokens(d2l.astype(src[0], d2l.int32)))
    print('target:', data.tgt_vocab.to_tokens(d2l.astype(tgt[0], d2l.int32)))
    assert capsys.readouterr().out == (
        "source: ['hi', '.', '<eos>', '<pad>', '<pad>', '<pad>', '<pad>', '<pad>', '<pad>']\n"
        "target: ['<bos>', 'salut', '.', '<eos>', '<pad>', '<pad>', '<pad>', '<pad>', "
        "'<pad>']\n")
    # (min_freq=2: a word seen once is '<unk>')
    assert data.build(['zzz .'], ['salut .'])[0][0, 0] == data.src_vocab.unk


# -- d2l 10.6 The encoder-decoder architecture -----------------------------------------------

def test_d2l_10_6_encoder_decoder():
    class Encoder(tf.keras.layers.Layer):  #@save
        """The base encoder interface for the encoder--decoder architecture."""
        def __init__(self):
            super().__init__()

        # Later there can be additional arguments (e.g., length excluding padding)
        def call(self, X, *args):
            raise NotImplementedError

    class Decoder(tf.keras.layers.Layer):  #@save
        """The base decoder interface for the encoder--decoder architecture."""
        def __init__(self):
            super().__init__()

        # Later there can be additional arguments (e.g., length excluding padding)
        def init_state(self, enc_all_outputs, *args):
            raise NotImplementedError

        def call(self, X, state):
            raise NotImplementedError

    class EncoderDecoder(d2l.Classifier):  #@save
        """The base class for the encoder--decoder architecture."""
        def __init__(self, encoder, decoder):
            super().__init__()
            self.encoder = encoder
            self.decoder = decoder

        def call(self, enc_X, dec_X, *args):
            enc_all_outputs = self.encoder(enc_X, *args, training=True)
            dec_state = self.decoder.init_state(enc_all_outputs, *args)
            # Return decoder output only
            return self.decoder(dec_X, dec_state, training=True)[0]

    with pytest.raises(NotImplementedError):
        Encoder()(tf.zeros((2, 3)))
    with pytest.raises(NotImplementedError):
        Decoder().init_state(None)

    # A toy pair through the interface: the encoder sums its input, the decoder adds the
    # state; ``training=True`` reaches both calls, the extra argument reaches init_state.
    seen = {}

    class SumEncoder(Encoder):
        def call(self, X, *args, training=None):
            seen['encoder'] = (args, training)
            return d2l.reduce_sum(X, 1)

    class AddDecoder(Decoder):
        def init_state(self, enc_all_outputs, *args):
            seen['init_state'] = args
            return enc_all_outputs

        def call(self, X, state, training=None):
            seen['decoder'] = training
            return X + state[:, None], state

    model = EncoderDecoder(SumEncoder(), AddDecoder())
    Y = model(tf.constant([[1.0, 2.0], [3.0, 4.0]]), tf.constant([[10.0], [20.0]]),
              tf.constant([2, 1]))
    np.testing.assert_array_equal(Y.numpy(), [[13.0], [27.0]])
    assert seen['decoder'] is True and seen['encoder'][1] is True
    assert [a.numpy().tolist() for a in seen['encoder'][0]] == [[2, 1]]
    assert [a.numpy().tolist() for a in seen['init_state']] == [[2, 1]]


# -- d2l 10.7 Sequence-to-sequence learning for machine translation --------------------------

def seq2seq_np(model, src, dec_X, get=lambda v: v.numpy().astype(np.float64), state=None):
    """d2l's ``Seq2SeqEncoder`` and ``Seq2SeqDecoder`` (no dropout) in NumPy: embeddings,
    stacked Keras GRUs over the time-major sequence, the encoder's last top-layer output as
    context at every decoder step, a dense layer. Returns the logits ``(batch, steps, V)``
    and the decoder's state ``(context, [h per layer])``."""
    def gru_stack(rnn, embs, H):
        steps = [keras_gru_step(c, get) for c in rnn.rnn.cell.cells]
        outs = []
        for x in embs:
            new = []
            for s, h in zip(steps, H):
                x, = s(x, (h,))
                new.append(x)
            H = new
            outs.append(x)
        return np.stack(outs), H

    enc, dec = model.encoder, model.decoder
    if state is None:
        embs = get(enc.embedding.embeddings)[np.asarray(src, np.int64).T]
        H0 = [np.zeros((embs.shape[1], c.units)) for c in enc.rnn.rnn.cell.cells]
        enc_out, H = gru_stack(enc.rnn, embs, H0)
        state = (enc_out[-1], H)
    context, H = state
    embs = get(dec.embedding.embeddings)[np.asarray(dec_X, np.int64).T]
    ctx = np.broadcast_to(context, (embs.shape[0],) + context.shape)
    out, H = gru_stack(dec.rnn, np.concatenate([embs, ctx], -1), H)
    logits = np.transpose(out @ get(dec.dense.kernel) + get(dec.dense.bias), (1, 0, 2))
    return logits, (context, H)


def test_d2l_10_7_seq2seq(data_dir, capsys):
    import collections

    class Seq2SeqEncoder(d2l.Encoder):  #@save
        """The RNN encoder for sequence-to-sequence learning."""
        def __init__(self, vocab_size, embed_size, num_hiddens, num_layers,
                     dropout=0):
            super().__init__()
            self.embedding = tf.keras.layers.Embedding(vocab_size, embed_size)
            self.rnn = d2l.GRU(num_hiddens, num_layers, dropout)

        def call(self, X, *args):
            # X shape: (batch_size, num_steps)
            embs = self.embedding(d2l.transpose(X))
            # embs shape: (num_steps, batch_size, embed_size)
            outputs, state = self.rnn(embs)
            # outputs shape: (num_steps, batch_size, num_hiddens)
            # state shape: (num_layers, batch_size, num_hiddens)
            return outputs, state

    vocab_size, embed_size, num_hiddens, num_layers = 10, 8, 16, 2
    batch_size, num_steps = 4, 9
    encoder = Seq2SeqEncoder(vocab_size, embed_size, num_hiddens, num_layers)
    X = d2l.zeros((batch_size, num_steps))
    enc_outputs, enc_state = encoder(X)
    d2l.check_shape(enc_outputs, (num_steps, batch_size, num_hiddens))

    d2l.check_len(enc_state, num_layers)
    d2l.check_shape(enc_state[0], (batch_size, num_hiddens))

    class Seq2SeqDecoder(d2l.Decoder):
        """The RNN decoder for sequence to sequence learning."""
        def __init__(self, vocab_size, embed_size, num_hiddens, num_layers,
                     dropout=0):
            super().__init__()
            self.embedding = tf.keras.layers.Embedding(vocab_size, embed_size)
            self.rnn = d2l.GRU(num_hiddens, num_layers, dropout)
            self.dense = tf.keras.layers.Dense(vocab_size)

        def init_state(self, enc_all_outputs, *args):
            return enc_all_outputs

        def call(self, X, state):
            # X shape: (batch_size, num_steps)
            # embs shape: (num_steps, batch_size, embed_size)
            embs = self.embedding(d2l.transpose(X))
            enc_output, hidden_state = state
            # context shape: (batch_size, num_hiddens)
            context = enc_output[-1]
            # Broadcast context to (num_steps, batch_size, num_hiddens)
            context = tf.tile(tf.expand_dims(context, 0), (embs.shape[0], 1, 1))
            # Concat at the feature dimension
            embs_and_context = d2l.concat((embs, context), -1)
            outputs, hidden_state = self.rnn(embs_and_context, hidden_state)
            outputs = d2l.transpose(self.dense(outputs), (1, 0, 2))
            # outputs shape: (batch_size, num_steps, vocab_size)
            # hidden_state shape: (num_layers, batch_size, num_hiddens)
            return outputs, [enc_output, hidden_state]

    decoder = Seq2SeqDecoder(vocab_size, embed_size, num_hiddens, num_layers)
    state = decoder.init_state(encoder(X))
    dec_outputs, state = decoder(X, state)
    d2l.check_shape(dec_outputs, (batch_size, num_steps, vocab_size))
    d2l.check_len(state[1], num_layers)
    d2l.check_shape(state[1][0], (batch_size, num_hiddens))

    # the encoder and the decoder in NumPy (X is float zeros: token 0 everywhere)
    toy = types.SimpleNamespace(encoder=encoder, decoder=decoder)
    logits, _ = seq2seq_np(toy, np.zeros((4, 9), np.int64), np.zeros((4, 9), np.int64))
    np.testing.assert_allclose(dec_outputs.numpy(), logits, rtol=1e-4, atol=1e-6)

    class Seq2Seq(d2l.EncoderDecoder):  #@save
        """The RNN encoder--decoder for sequence to sequence learning."""
        def __init__(self, encoder, decoder, tgt_pad, lr):
            super().__init__(encoder, decoder)
            self.save_hyperparameters()

        def validation_step(self, batch):
            Y_hat = self(*batch[:-1])
            self.plot('loss', self.loss(Y_hat, batch[-1]), train=False)

        def configure_optimizers(self):
            # Adam optimizer is used here
            return tf.keras.optimizers.Adam(learning_rate=self.lr)

    @d2l.add_to_class(Seq2Seq)
    def loss(self, Y_hat, Y):
        l = super(Seq2Seq, self).loss(Y_hat, Y, averaged=False)
        mask = d2l.astype(d2l.reshape(Y, -1) != self.tgt_pad, d2l.float32)
        return d2l.reduce_sum(l * mask) / d2l.reduce_sum(mask)

    data = d2l.MTFraEng(batch_size=32, num_train=64, num_val=31)
    embed_size, num_hiddens, num_layers, dropout = 16, 16, 2, 0.2
    with d2l.try_gpu():
        encoder = Seq2SeqEncoder(
            len(data.src_vocab), embed_size, num_hiddens, num_layers, dropout)
        decoder = Seq2SeqDecoder(
            len(data.tgt_vocab), embed_size, num_hiddens, num_layers, dropout)
        model = Seq2Seq(encoder, decoder, tgt_pad=data.tgt_vocab['<pad>'],
                        lr=0.005)
    trainer = d2l.Trainer(max_epochs=4, gradient_clip_val=1)
    trainer.fit(model, data)

    losses = [p.y for p in model.board.data['val_loss']]
    assert len(losses) == 4 and losses[-1] < losses[0] < math.log(len(data.tgt_vocab)) + 0.5

    @d2l.add_to_class(d2l.EncoderDecoder)  #@save
    def predict_step(self, batch, device, num_steps,
                     save_attention_weights=False):
        src, tgt, src_valid_len, _ = batch
        enc_all_outputs = self.encoder(src, src_valid_len, training=False)
        dec_state = self.decoder.init_state(enc_all_outputs, src_valid_len)
        outputs, attention_weights = [d2l.expand_dims(tgt[:, 0], 1), ], []
        for _ in range(num_steps):
            Y, dec_state = self.decoder(outputs[-1], dec_state, training=False)
            outputs.append(d2l.argmax(Y, 2))
            # Save attention weights (to be covered later)
            if save_attention_weights:
                attention_weights.append(self.decoder.attention_weights)
        return d2l.concat(outputs[1:], 1), attention_weights

    def bleu(pred_seq, label_seq, k):  #@save
        """Compute the BLEU."""
        pred_tokens, label_tokens = pred_seq.split(' '), label_seq.split(' ')
        len_pred, len_label = len(pred_tokens), len(label_tokens)
        score = math.exp(min(0, 1 - len_label / len_pred))
        for n in range(1, min(k, len_pred) + 1):
            num_matches, label_subs = 0, collections.defaultdict(int)
            for i in range(len_label - n + 1):
                label_subs[' '.join(label_tokens[i: i + n])] += 1
            for i in range(len_pred - n + 1):
                if label_subs[' '.join(pred_tokens[i: i + n])] > 0:
                    num_matches += 1
                    label_subs[' '.join(pred_tokens[i: i + n])] -= 1
            score *= math.pow(num_matches / (len_pred - n + 1), math.pow(0.5, n))
        return score

    engs = ['go .', 'i lost .', 'he\'s calm .', 'i\'m home .']
    fras = ['va !', 'j\'ai perdu .', 'il est calme .', 'je suis chez moi .']
    preds, _ = model.predict_step(
        data.build(engs, fras), d2l.try_gpu(), data.num_steps)
    for en, fr, p in zip(engs, fras, preds):
        translation = []
        for token in data.tgt_vocab.to_tokens(p):
            if token == '<eos>':
                break
            translation.append(token)
        print(f'{en} => {translation}, bleu,'
              f'{bleu(" ".join(translation), fr, k=2):.3f}')

    # BLEU by hand: a perfect match is 1; 'a b c' against 'a b d' matches 2 of 3 unigrams and
    # 1 of 2 bigrams; a short prediction pays the brevity penalty exp(1 - 4/2).
    assert bleu('il est calme .', 'il est calme .', 2) == 1
    assert math.isclose(bleu('a b c', 'a b d', 2), (2 / 3) ** 0.5 * (1 / 2) ** 0.25)
    assert math.isclose(bleu('a b', 'a b c d', 2), math.exp(-1))
    # greedy decoding replayed in NumPy, and the printed lines
    src, tgt, _, _ = data.build(engs, fras)
    lines = []
    logits, state = seq2seq_np(model, src, tgt[:, :1])
    tokens = [np.argmax(logits[:, 0], -1)]
    for _ in range(data.num_steps - 1):
        logits, state = seq2seq_np(model, None, tokens[-1][:, None], state=state)
        tokens.append(np.argmax(logits[:, 0], -1))
    expected = np.stack(tokens, 1)
    np.testing.assert_array_equal(preds.numpy(), expected)
    for en, fr, p in zip(engs, fras, expected):
        words = data.tgt_vocab.to_tokens(list(p))
        words = words[:words.index('<eos>')] if '<eos>' in words else words
        lines.append(f'{en} => {words}, bleu,{bleu(" ".join(words), fr, k=2):.3f}')
    assert capsys.readouterr().out == '\n'.join(lines) + '\n'

    # The training step, without dropout (a new mask at each call would make differences
    # meaningless): the loss and its gradient against NumPy, and d2l's clipping.
    no_dropout = Seq2Seq(
        Seq2SeqEncoder(len(data.src_vocab), embed_size, num_hiddens, num_layers),
        Seq2SeqDecoder(len(data.tgt_vocab), embed_size, num_hiddens, num_layers),
        tgt_pad=data.tgt_vocab['<pad>'], lr=0.005)
    batch = next(iter(data.train_dataloader()))
    no_dropout(*batch[:-1])
    label = batch[-1].numpy()

    def loss_np(get):
        logits, _ = seq2seq_np(no_dropout, batch[0], batch[1], get)
        # TensorFlow's Classifier.loss ignores ``averaged=False``: its
        # SparseCategoricalCrossentropy returns the mean over all the tokens, a scalar, and
        # sum(l * mask) / sum(mask) is that scalar again. The pads count, in TensorFlow too.
        return softmax_ce_np(logits, label).mean()

    check_lm_step(no_dropout, batch, loss_np)
    # On logits far from uniform: the loss is the mean over all the tokens, not the masked
    # mean over the non-pad tokens that the text describes.
    # (sure and right on the words, sure and wrong on the pads)
    pads = (label == data.tgt_vocab['<pad>']).ravel()
    logits = np.eye(len(data.tgt_vocab))[label] * np.where(pads, -5.0, 5.0).reshape(
        label.shape + (1,))
    per_token = softmax_ce_np(logits, label)
    l = float(no_dropout.loss(tf.constant(logits, tf.float32), batch[-1]))
    assert pads.any() and math.isclose(l, per_token.mean(), rel_tol=1e-5)
    assert l > 2 * per_token[~pads].mean()
    # dropout: on in the encoder-decoder's training calls, off in predict_step's
    assert not np.allclose(model(*batch[:-1]).numpy(), model(*batch[:-1]).numpy())
    assert np.array_equal(model.predict_step(batch, None, 5)[0].numpy(),
                          model.predict_step(batch, None, 5)[0].numpy())
    with tf.GradientTape() as tape:
        l = no_dropout.loss(no_dropout(*batch[:-1]), batch[-1])
    grads = tape.gradient(l, no_dropout.trainable_variables)
    # minitape's gradient of an embedding lookup is dense (TensorFlow's is an IndexedSlices,
    # which the book's clip_gradients converts): zero on the rows of the tokens not looked up
    table = no_dropout.encoder.embedding.embeddings
    g = np.asarray(grads[[id(v) for v in no_dropout.trainable_variables].index(id(table))])
    unused = sorted(set(range(len(data.src_vocab))) - set(batch[0].numpy().ravel().tolist()))
    assert unused and not g[unused].any() and g.any()


def test_d2l_sequence_mask():
    """d2l's ``sequence_mask`` (its utilities, used by the masked losses and attention):
    entries at or past each row's valid length become ``value``."""
    X = tf.constant([[1, 2, 3], [4, 5, 6]])
    np.testing.assert_array_equal(d2l.sequence_mask(X, tf.constant([1, 2])).numpy(),
                                  [[1, 0, 0], [4, 5, 0]])
    rng = np.random.default_rng(0)
    x = rng.standard_normal((4, 5, 3)).astype(np.float32)
    valid = np.array([0, 2, 5, 3])
    expected = np.where((np.arange(5)[None, :] < valid[:, None])[..., None], x, -1.0)
    np.testing.assert_array_equal(
        d2l.sequence_mask(tf.constant(x), tf.constant(valid), value=-1).numpy(), expected)
    # The older edition's masked loss (d2l 0.17, section 9.7): its printed example, and
    # random logits against NumPy (the mean over all steps of the masked per-step losses)
    loss = d2l.MaskedSoftmaxCELoss(tf.constant([4, 2, 0]))
    np.testing.assert_allclose(
        loss(tf.ones((3, 4), dtype=tf.int32), tf.ones((3, 4, 10))).numpy(),
        [2.3025851, 1.1512926, 0.0], rtol=1e-6)
    logits = rng.standard_normal((4, 5, 7)) * 2
    labels = rng.integers(0, 7, (4, 5))
    per_token = softmax_ce_np(logits, labels).reshape(4, 5)
    masked_mean = (per_token * (np.arange(5)[None, :] < valid[:, None])).mean(axis=1)
    got = d2l.MaskedSoftmaxCELoss(tf.constant(valid))(tf.constant(labels),
                                                       tf.constant(logits, tf.float32))
    assert got.shape == (4,)
    np.testing.assert_allclose(got.numpy(), masked_mean, rtol=1e-5, atol=1e-6)
    # its gradient reaches the kept entries only
    v = tf.Variable(x)
    with tf.GradientTape() as tape:
        y = d2l.reduce_sum(d2l.sequence_mask(v, tf.constant(valid)) ** 2)
    np.testing.assert_allclose(tape.gradient(y, v).numpy(), 2 * np.where(expected == -1, 0, x))


# -- d2l 10.8 Beam search --------------------------------------------------------------------

TOKENS = ('A', 'B', 'C', '<eos>')


def s2s_probs(prefix):
    """The section's example (its figures 10.8.1 and 10.8.2): P(next token | prefix, c) over
    A, B, C, <eos>. The text fixes the numbers on the two paths it follows (greedy: A B C
    <eos>, 0.5 x 0.4 x 0.4 x 0.6 = 0.048; the other: A C B <eos>, 0.5 x 0.3 x 0.6 x 0.6 =
    0.054); other prefixes get (0.3, 0.3, 0.3, 0.1)."""
    return {(): (.5, .2, .2, .1), ('A',): (.1, .4, .3, .2), ('A', 'B'): (.2, .2, .4, .2),
            ('A', 'B', 'C'): (.1, .2, .1, .6), ('A', 'C'): (.1, .6, .2, .1),
            ('A', 'C', 'B'): (.1, .2, .1, .6)}.get(tuple(prefix), (.3, .3, .3, .1))


def test_d2l_10_8_beam_search():
    """The section has no code: its example, searched with minitape (``tf.math.log``,
    ``tf.math.top_k``), against the probabilities the text works out and an exhaustive
    search in NumPy."""
    alpha, max_len = 0.75, 4

    def greedy():
        prefix, logp = (), 0.0
        while len(prefix) < max_len and prefix[-1:] != ('<eos>',):
            p = tf.constant(s2s_probs(prefix), tf.float64)
            y = int(tf.argmax(p))
            prefix, logp = prefix + (TOKENS[y],), logp + float(tf.math.log(p[y]))
        return prefix, logp

    def beam_search(k):
        """Keep the k most likely prefixes at each step (from k |Y| choices); a prefix that
        ends with <eos> is a finished candidate. The best candidate by the section's score
        (1 / L^alpha) log P(y_1..y_L | c)."""
        beams, candidates = [((), 0.0)], []
        for _ in range(max_len):
            logp = (tf.constant([[lp] for _, lp in beams], tf.float64)
                    + tf.math.log(tf.constant([s2s_probs(p) for p, _ in beams], tf.float64)))
            flat = tf.reshape(logp, [-1])             # the k |Y| choices
            top = tf.math.top_k(flat, k=min(k, flat.shape[0]))
            kept = []
            for value, i in zip(top.values.numpy(), top.indices.numpy()):
                prefix = beams[i // len(TOKENS)][0] + (TOKENS[i % len(TOKENS)],)
                (candidates if prefix[-1] == '<eos>' else kept).append((prefix, float(value)))
            beams = kept
            if not beams:
                break
        candidates += beams
        score = lambda c: c[1] / len(c[0]) ** alpha
        return max(candidates, key=score), candidates

    seq, logp = greedy()
    assert seq == ('A', 'B', 'C', '<eos>') and math.isclose(math.exp(logp), 0.048)
    path = ('A', 'C', 'B', '<eos>')
    other = sum(math.log(s2s_probs(path[:i])[TOKENS.index(path[i])]) for i in range(4))
    assert math.isclose(math.exp(other), 0.054)  # more likely than greedy's

    (best, best_logp), candidates = beam_search(2)
    assert best == ('A', 'C', 'B', '<eos>') and math.isclose(best_logp, other)
    assert {c for c, _ in candidates} == {('A', 'C', 'B', '<eos>'), ('A', 'B', 'C', '<eos>')}
    (best1, logp1), _ = beam_search(1)        # beam size 1 is greedy search
    assert best1 == seq and math.isclose(logp1, logp)

    # exhaustive search, in NumPy: every sequence of at most max_len tokens that ends with
    # <eos> (or reaches max_len), by the same score
    import itertools
    best_score, best_seq = -np.inf, None
    for L in range(1, max_len + 1):
        for s in itertools.product(TOKENS, repeat=L):
            if '<eos>' in s[:-1] or (L < max_len and s[-1] != '<eos>'):
                continue
            lp = sum(np.log(s2s_probs(s[:i])[TOKENS.index(s[i])]) for i in range(L))
            if lp / L ** alpha > best_score:
                best_score, best_seq = lp / L ** alpha, s
    assert best_seq == best and math.isclose(best_score, best_logp / 4 ** alpha)


# -- the fixes these chapters needed ---------------------------------------------------------

def test_top_k_documented_examples():
    """``tf.math.top_k``'s documented examples (TensorFlow 2.13's page): the three largest,
    and ties going to the lower index."""
    result = tf.math.top_k([1, 2, 98, 1, 1, 99, 3, 1, 3, 96, 4, 1], k=3)
    assert result.values.numpy().tolist() == [99, 98, 96]
    assert result.indices.numpy().tolist() == [5, 2, 9]
    assert result.values.dtype == result.indices.dtype == tf.int32
    result = tf.math.top_k([1, 1, 0, 1, 0, 1, 0, 0, 1, 0, 0, 0, 1, 0], k=3)
    assert result.indices.numpy().tolist() == [0, 1, 3]
    assert tf.nn.top_k is tf.math.top_k
    values, indices = tf.math.top_k(tf.random.normal(shape=(3, 4, 5, 6)), k=2)
    assert values.shape == indices.shape == (3, 4, 5, 2)


def test_top_k_against_numpy():
    rng = np.random.default_rng(5)
    x = rng.integers(0, 4, (3, 2, 7)).astype(np.float64)   # many ties
    for k in (0, 1, 4, 7):
        values, indices = tf.math.top_k(tf.constant(x), k=tf.constant(k), index_type=tf.int64)
        assert indices.dtype == tf.int64 and values.dtype == tf.float64
        assert values.shape == indices.shape == (3, 2, k)
        for row, v, i in zip(x.reshape(-1, 7), values.numpy().reshape(6, k),
                             indices.numpy().reshape(6, k)):
            expected = sorted(range(7), key=lambda j: (-row[j], j))[:k]
            assert i.tolist() == expected and v.tolist() == row[expected].tolist()
    # the gradient of the values goes to the entries taken (finite differences: no ties)
    x = tf.Variable(rng.standard_normal((2, 5)))
    w = tf.constant(rng.standard_normal((2, 3)))
    with tf.GradientTape() as tape:
        y = d2l.reduce_sum(tf.math.top_k(x, k=3).values ** 2 * w)
    g = tape.gradient(y, x).numpy()
    top = np.argsort(-x.numpy(), axis=1)[:, :3]
    expected = np.zeros((2, 5))
    np.put_along_axis(expected, top, 2 * np.take_along_axis(x.numpy(), top, 1) * w.numpy(), 1)
    np.testing.assert_allclose(g, expected, rtol=1e-12)


def test_top_k_bad_input():
    with pytest.raises(tf.errors.InvalidArgumentError,
                       match="input must have at least k columns. Had 3, needed 5"):
        tf.math.top_k(tf.constant([1.0, 2.0, 3.0]), k=5)
    with pytest.raises(tf.errors.InvalidArgumentError, match="Need k >= 0, got -1"):
        tf.math.top_k(tf.constant([1.0, 2.0]), k=-1)
    with pytest.raises(ValueError, match="rank 1 or more"):
        tf.math.top_k(tf.constant(3.0))
    with pytest.raises(TypeError, match="numeric"):
        tf.math.top_k(tf.constant([True, False]))
    with pytest.raises(TypeError, match="k must be an int"):
        tf.math.top_k(tf.constant([1.0, 2.0]), k=1.5)
    with pytest.raises(TypeError, match="index_type"):
        tf.math.top_k(tf.constant([1.0, 2.0]), index_type=tf.float32)
