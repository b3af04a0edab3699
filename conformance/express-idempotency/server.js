// POST /callbacks/pay behind express-idempotency, set up as its README
// shows: `app.post('*', idempotency.idempotency())` with the default
// options (header `Idempotency-Key`, the in-memory data adapter), and a
// handler that returns early when `isHit(req)` says the middleware already
// answered.
//
// The business step records one payment per run (so a double payment is a
// second row for one key) after DOWNSTREAM_DELAY_MS (default 300) of
// "calling the bank". GET /stats counts payments and the keys they were
// made under. LISTEN_ADDR (default 127.0.0.1:8080) is where it serves.
'use strict';

const express = require('express');
const idempotency = require('express-idempotency');

const delay = Number(process.env.DOWNSTREAM_DELAY_MS ?? 300);
const [host, port] = (process.env.LISTEN_ADDR ?? '127.0.0.1:8080').split(':');

// One entry per payment made: the idempotency key it was made under.
const payments = [];

const app = express();
app.use(express.json());
app.post('*', idempotency.idempotency());

app.post('/callbacks/pay', async (req, res) => {
    const idempotencyService = idempotency.getSharedIdempotencyService();
    if (idempotencyService.isHit(req)) {
        return;
    }
    await new Promise((resolve) => setTimeout(resolve, delay));
    payments.push(req.get('Idempotency-Key') ?? '');
    const { txn_id, order_no, amount, date } = req.body;
    res.status(200).json({
        payment_id: payments.length,
        order_no,
        txn_id,
        amount,
        date,
        status: 'paid',
        paid_at: Date.now(),
    });
});

app.get('/stats', (req, res) => {
    res.json({ payments: payments.length, keys: new Set(payments).size });
});

app.listen(Number(port), host);
