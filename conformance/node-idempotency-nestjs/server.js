// POST /callbacks/pay behind @node-idempotency/nestjs, set up as its README
// shows: `NodeIdempotencyModule.forRootAsync({ storage: { adapter:
// StorageAdapterEnum.memory }, ...idempotencyOptions })` and an
// `@Idempotent()` handler. The one option given, `cacheTTLMS: 18000`, is
// the contract's window (18 s), so the probe can reuse a key after it.
// Plain JavaScript: the decorators are applied as TypeScript would.
//
// The business step records one payment per run (so a double payment is a
// second row for one key) after DOWNSTREAM_DELAY_MS (default 300) of
// "calling the bank". GET /stats counts payments and the keys they were
// made under. LISTEN_ADDR (default 127.0.0.1:8080) is where it serves.
'use strict';

require('reflect-metadata');
const { Body, Controller, Get, Headers, HttpCode, Module, Post } = require('@nestjs/common');
const { NestFactory } = require('@nestjs/core');
const {
    Idempotent,
    NodeIdempotencyModule,
    StorageAdapterEnum,
} = require('@node-idempotency/nestjs');

const delay = Number(process.env.DOWNSTREAM_DELAY_MS ?? 300);
const [host, port] = (process.env.LISTEN_ADDR ?? '127.0.0.1:8080').split(':');

// One entry per payment made: the idempotency key it was made under.
const payments = [];

class PayController {
    async pay(body, key) {
        await new Promise((resolve) => setTimeout(resolve, delay));
        payments.push(key ?? '');
        const { txn_id, order_no, amount, date } = body;
        return {
            payment_id: payments.length,
            order_no,
            txn_id,
            amount,
            date,
            status: 'paid',
            paid_at: Date.now(),
        };
    }

    stats() {
        return { payments: payments.length, keys: new Set(payments).size };
    }
}

/// `@decorator` on a method, as TypeScript compiles it.
function decorateMethod(target, name, decorators) {
    const descriptor = Object.getOwnPropertyDescriptor(target.prototype, name);
    Object.defineProperty(
        target.prototype,
        name,
        Reflect.decorate(decorators, target.prototype, name, descriptor),
    );
}

// @Post('callbacks/pay') @HttpCode(200) @Idempotent()
// pay(@Body() body, @Headers('idempotency-key') key)
Body()(PayController.prototype, 'pay', 0);
Headers('idempotency-key')(PayController.prototype, 'pay', 1);
decorateMethod(PayController, 'pay', [Post('callbacks/pay'), HttpCode(200), Idempotent()]);
// @Get('stats') stats()
decorateMethod(PayController, 'stats', [Get('stats')]);
const PayControllerDecorated = Reflect.decorate([Controller()], PayController);

class AppModule {}
const AppModuleDecorated = Reflect.decorate(
    [
        Module({
            imports: [
                NodeIdempotencyModule.forRootAsync({
                    storage: { adapter: StorageAdapterEnum.memory },
                    cacheTTLMS: 18000,
                }),
            ],
            controllers: [PayControllerDecorated],
        }),
    ],
    AppModule,
);

NestFactory.create(AppModuleDecorated, { logger: false }).then((app) =>
    app.listen(Number(port), host),
);
