"""plumb's workloads that PyTorch users also have, written in plain PyTorch as a user of Debian's
python3-torch / python3-torchvision would write them: the same layers, parameterisation,
losses, optimizers and synthetic data as plumb's C++ workloads (src/plumb/workloads/), so a
throughput ratio compares the same computation with and without the Python interpreter.
"""
import math

import torch
import torch.nn as nn
import torch.nn.functional as F
import torchvision

# --------------------------------------------------------------------------- data


def log_uniform_probabilities(vocab):
    k = torch.arange(vocab, dtype=torch.float64)
    return ((torch.log(k + 2) - torch.log(k + 1)) / math.log(vocab + 1)).float()


def zipf_tokens(probs, rows, cols, first_id):
    return torch.multinomial(probs, rows * cols, replacement=True).view(rows, cols) + first_id


# --------------------------------------------------------------------------- image classifiers


class Classifier:
    """A torchvision classifier with plumb's recipe for the same workload: SGD (momentum,
    weight decay, Nesterov where plumb's uses it), cross-entropy, N(0,1) images."""
    unit = "images/s"

    def __init__(self, net, batch, lr, momentum, weight_decay, nesterov=False, image_size=224,
                 classes=1000):
        self.net = net
        self.opt = torch.optim.SGD(self.net.parameters(), lr=lr, momentum=momentum,
                                   weight_decay=weight_decay, nesterov=nesterov)
        self.batch, self.size, self.classes = batch, image_size, classes

    def make_batch(self):
        x = torch.randn(self.batch, 3, self.size, self.size)
        y = torch.randint(self.classes, (self.batch,))
        return (x, y), float(self.batch)

    def loss(self, x, y):
        return F.cross_entropy(self.net(x), y)

    def train_step(self, b):
        self.opt.zero_grad()
        loss = self.loss(*b)
        loss.backward()
        self.opt.step()
        return loss.item()

    def infer_step(self, b):
        return self.net(b[0]).sum().item()


def resnext101_32x4d():
    return torchvision.models.resnet.ResNet(torchvision.models.resnet.Bottleneck, [3, 4, 23, 3],
                                            groups=32, width_per_group=4)


# name -> (torchvision constructor, lr, momentum, weight decay, nesterov): plumb's recipes
# (src/plumb/workloads/); squeezenet's lr is scaled with the batch as plumb's is.
TORCHVISION = {
    "alexnet": (torchvision.models.alexnet, 0.01, 0.9, 5e-4, False),
    "vgg19": (torchvision.models.vgg19, 0.01, 0.9, 5e-4, False),
    "residual": (torchvision.models.resnet34, 0.1, 0.9, 1e-4, False),
    "resnet50": (torchvision.models.resnet50, 0.1, 0.9, 1e-4, False),
    "densenet121": (torchvision.models.densenet121, 0.1, 0.9, 1e-4, True),
    "squeezenet1_0": (torchvision.models.squeezenet1_0, 0.04, 0.9, 2e-4, False),
    "resnext101_32x4d": (resnext101_32x4d, 0.1, 0.9, 1e-4, False),
}


class InceptionV3(Classifier):
    """plumb's inception_v3 recipe: 299x299, main + 0.4 x aux cross-entropy with label
    smoothing 0.1, RMSProp (decay 0.9, eps 1.0, momentum 0.9, lr 0.045), global-norm clip 2."""

    def __init__(self, batch):
        net = torchvision.models.inception_v3(aux_logits=True, init_weights=True)
        super().__init__(net, batch, 0.045, 0.9, 0.0, image_size=299)
        self.opt = torch.optim.RMSprop(net.parameters(), lr=0.045, alpha=0.9, eps=1.0,
                                       momentum=0.9)

    def loss(self, x, y):
        out = self.net(x)
        loss = F.cross_entropy(out.logits, y, label_smoothing=0.1)
        return loss + 0.4 * F.cross_entropy(out.aux_logits, y, label_smoothing=0.1)

    def train_step(self, b):
        self.opt.zero_grad()
        loss = self.loss(*b)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(self.net.parameters(), 2.0)
        self.opt.step()
        return loss.item()


def torchvision_classifier(name):
    make, lr, momentum, wd, nesterov = TORCHVISION[name]
    if name == "squeezenet1_0":
        return lambda batch: Classifier(make(), batch, lr * batch / 512, momentum, wd)
    return lambda batch: Classifier(make(), batch, lr, momentum, wd, nesterov)


# --------------------------------------------------------------------------- autoenc


class Vae(nn.Module):
    def __init__(self, pixels=784, hidden=500, latent=20):
        super().__init__()
        self.encoder = nn.Linear(pixels, hidden)
        self.mu = nn.Linear(hidden, latent)
        self.log_var = nn.Linear(hidden, latent)
        self.decoder = nn.Linear(latent, hidden)
        self.output = nn.Linear(hidden, pixels)

    def forward(self, x):
        h = torch.tanh(self.encoder(x))
        m, lv = self.mu(h), self.log_var(h)
        z = m + torch.exp(0.5 * lv) * torch.randn_like(m)
        return self.output(torch.tanh(self.decoder(z))), m, lv


class Autoenc:
    unit = "images/s"

    def __init__(self, batch):
        self.net = Vae()
        self.opt = torch.optim.Adagrad(self.net.parameters(), lr=0.01)
        self.batch = batch

    def make_batch(self):
        ink = (torch.rand(self.batch, 784) < 0.19).float()
        return (ink * (torch.rand(self.batch, 784) * 0.5 + 0.5),), float(self.batch)

    def train_step(self, b):
        self.opt.zero_grad()
        x = b[0]
        logits, m, lv = self.net(x)
        bce = F.binary_cross_entropy_with_logits(logits, x, reduction="none").sum(1)
        kl = -0.5 * (1 + lv - m.pow(2) - lv.exp()).sum(1)
        loss = (bce + kl).mean()
        loss.backward()
        self.opt.step()
        return loss.item()

    def infer_step(self, b):
        return torch.sigmoid(self.net(b[0])[0]).sum().item()


# --------------------------------------------------------------------------- seq2seq

RESERVED, GO = 4, 1


class LstmLayer(nn.Module):
    """TensorFlow BasicLSTMCell parameterisation: one bias vector, forget slice starts at 1."""

    def __init__(self, inp, hidden):
        super().__init__()
        bound = 1.0 / math.sqrt(hidden)
        self.weight_ih = nn.Parameter(torch.empty(4 * hidden, inp).uniform_(-bound, bound))
        self.weight_hh = nn.Parameter(torch.empty(4 * hidden, hidden).uniform_(-bound, bound))
        self.bias = nn.Parameter(torch.zeros(4 * hidden))
        with torch.no_grad():
            self.bias[hidden:2 * hidden] = 1.0

    def forward(self, x, h, c):
        return torch.lstm_cell(x, (h, c), self.weight_ih, self.weight_hh, self.bias, None)


class Attention(nn.Module):
    def __init__(self, memory, query, size):
        super().__init__()
        self.memory_proj = nn.Linear(memory, size, bias=False)
        self.query_proj = nn.Linear(query, size)
        self.v = nn.Parameter(torch.empty(size).uniform_(-0.1, 0.1))


class Seq2SeqNet(nn.Module):
    def __init__(self, V=40000, E=256, H=256, L=3):
        super().__init__()
        self.L = L
        self.encoder_embedding = nn.Embedding(V, E, sparse=True)
        self.encoder_lstm = nn.ModuleList([LstmLayer(E if l == 0 else H, H) for l in range(L)])
        self.decoder_embedding = nn.Embedding(V, E, sparse=True)
        self.input_proj = nn.Linear(E + H, E)
        self.decoder_lstm = nn.ModuleList([LstmLayer(E if l == 0 else H, H) for l in range(L)])
        self.attention = Attention(H, 2 * L * H, H)
        self.output_proj = nn.Linear(2 * H, H)
        self.projection = nn.Linear(H, V)

    @staticmethod
    def stack_step(layers, x, hs, cs):
        for l, layer in enumerate(layers):
            hs[l], cs[l] = layer(x, hs[l], cs[l])
            x = hs[l]
        return x

    def encode(self, source):
        emb = self.encoder_embedding(source)
        zeros = torch.zeros(source.size(0), self.projection.in_features)
        hs, cs = [zeros] * self.L, [zeros] * self.L
        outs = [self.stack_step(self.encoder_lstm, emb.select(1, t), hs, cs) for t in range(source.size(1))]
        outputs = torch.stack(outs, 1)
        return outputs, self.attention.memory_proj(outputs), hs, cs

    def attend(self, outputs, features, hs, cs):
        flat = []
        for l in range(self.L):
            flat += [cs[l], hs[l]]
        query = self.attention.query_proj(torch.cat(flat, 1))
        scores = (torch.tanh(features + query.unsqueeze(1)) * self.attention.v).sum(2)
        return torch.bmm(torch.softmax(scores, 1).unsqueeze(1), outputs).squeeze(1)

    def decode_step(self, enc, inp, hs, cs, context):
        x = self.input_proj(torch.cat([inp, context], 1))
        top = self.stack_step(self.decoder_lstm, x, hs, cs)
        context = self.attend(enc[0], enc[1], hs, cs)
        return self.output_proj(torch.cat([top, context], 1)), context

    def forward_train(self, source, decoder_input):
        enc = self.encode(source)
        hs, cs = list(enc[2]), list(enc[3])
        context = torch.zeros_like(hs[0])
        emb = self.decoder_embedding(decoder_input)
        outs = []
        for t in range(decoder_input.size(1)):
            out, context = self.decode_step(enc, emb.select(1, t), hs, cs, context)
            outs.append(out)
        return torch.stack(outs, 0)

    def forward_greedy(self, source, steps):
        enc = self.encode(source)
        hs, cs = list(enc[2]), list(enc[3])
        context = torch.zeros_like(hs[0])
        token = torch.full((source.size(0),), GO, dtype=torch.long)
        checksum = torch.zeros(())
        for _ in range(steps):
            out, context = self.decode_step(enc, self.decoder_embedding(token), hs, cs, context)
            best, token = self.projection(out).max(1)
            checksum = checksum + best.sum()
        return checksum


class Seq2seq:
    unit = "tokens/s"

    def __init__(self, batch, V=40000, S=40, T=50, samples=512):
        self.net = Seq2SeqNet(V=V)
        self.opt = torch.optim.SGD(self.net.parameters(), lr=0.5)
        self.batch, self.S, self.T, self.V, self.K = batch, S, T, V, samples
        self.src_probs = log_uniform_probabilities(V - RESERVED)
        self.tgt_probs = log_uniform_probabilities(V - RESERVED)
        self.sampler_probs = log_uniform_probabilities(V)

    def make_batch(self):
        B, T = self.batch, self.T
        source = zipf_tokens(self.src_probs, B, self.S, RESERVED)
        target = zipf_tokens(self.tgt_probs, B, T, RESERVED)
        lengths = torch.randint(T // 2, T + 1, (B, 1))
        weights = (torch.arange(T).unsqueeze(0) < lengths).float()
        target = target * weights.long()
        dec_in = torch.cat([torch.full((B, 1), GO, dtype=torch.long), target[:, : T - 1]], 1)
        return (source, dec_in, target, weights), float(B * T)

    def sampled_loss(self, outputs, targets):
        steps, K = outputs.size(0), self.K
        w, b = self.net.projection.weight, self.net.projection.bias
        sampled = torch.multinomial(self.sampler_probs.expand(steps, self.V), K, replacement=False)
        log_q = torch.log(self.sampler_probs * float(K))
        flat = targets.flatten()
        true_logit = ((outputs * F.embedding(targets, w)).sum(2)
                      + b.index_select(0, flat).view(targets.shape)
                      - log_q.index_select(0, flat).view(targets.shape))
        sflat = sampled.flatten()
        sampled_logit = torch.bmm(outputs, F.embedding(sampled, w).transpose(1, 2)) + (
            b.index_select(0, sflat) - log_q.index_select(0, sflat)).view(steps, 1, K)
        sampled_logit = sampled_logit.masked_fill(sampled.unsqueeze(1).eq(targets.unsqueeze(2)), -1e30)
        logits = torch.cat([true_logit.unsqueeze(2), sampled_logit], 2)
        return -torch.log_softmax(logits, 2).select(2, 0)

    def train_step(self, b):
        self.opt.zero_grad()
        outputs = self.net.forward_train(b[0], b[1])
        targets, weights = b[2].t(), b[3].t()
        token_loss = self.sampled_loss(outputs, targets)
        loss = ((token_loss * weights).sum(0) / (weights.sum(0) + 1e-12)).mean()
        loss.backward()
        torch.nn.utils.clip_grad_norm_(self.net.parameters(), 5.0)
        self.opt.step()
        return loss.item()

    def infer_step(self, b):
        return self.net.forward_greedy(b[0], self.T).item()


MODELS = {"autoenc": Autoenc, "seq2seq": Seq2seq}
MODELS.update({name: torchvision_classifier(name) for name in TORCHVISION})
MODELS["inception_v3"] = InceptionV3


def trainable_parameters(model):
    return sum(p.numel() for p in model.net.parameters() if p.requires_grad)
