// Drives Firefox ESR headless over WebDriver BiDi with puppeteer-core, for tests/support/engines.py.
//
// One JSON command per line on stdin, one JSON answer per line on stdout:
//   {"op": "goto", "url": ...}              -> {"ok": true}
//   {"op": "evaluate", "expression": ...}   -> {"ok": true, "value": ...}
//   {"op": "frame", "index": ...}          (evaluate and press act in the index-th
//                                            iframe's page from now on; null: the page)
//   {"op": "press", "expression": ..., "key": ...}   (the expression yields an element)
//   {"op": "screenshot", "path": ...}
//   {"op": "pdf"}                           -> {"ok": true, "value": the PDF, base64}
//   {"op": "viewport", "width": ..., "height": ...}
//   {"op": "tap", "x": ..., "y": ...}       (CSS px of the viewport, a touch)
//   {"op": "errors"}                        -> {"ok": true, "value": [console errors so far]}
//   {"op": "close"}
// A failed command answers {"ok": false, "error": "..."}.
import * as readline from 'node:readline';
import puppeteer from 'puppeteer-core';

const FIREFOX = '/usr/lib/firefox-esr/firefox-esr';
// `node firefox.mjs --phone '{"width": ..., "height": ..., "deviceScaleFactor": ...}'`
// stands in for a phone (tests/support/engines.py's PHONE): that viewport, and a coarse
// pointer that cannot hover (Gecko's pointer capabilities: 1 is coarse).
const phoneAt = process.argv.indexOf('--phone');
const phone = phoneAt > 0 ? JSON.parse(process.argv[phoneAt + 1]) : null;
const COARSE_POINTER = {'ui.primaryPointerCapabilities': 1, 'ui.allPointerCapabilities': 1};

const browser = await puppeteer.launch({
  browser: 'firefox',
  executablePath: FIREFOX,
  headless: true,
  protocol: 'webDriverBiDi',
  extraPrefsFirefox: phone ? COARSE_POINTER : {},
});
const page = await browser.newPage();
await page.setViewport(phone ?? {width: 1280, height: 900});
const errors = [];
page.on('console', (message) => {
  if (message.type() === 'error') errors.push(message.text());
});
page.on('pageerror', (error) => errors.push(`uncaught: ${error.message ?? error}`));

// Playwright's key names that Puppeteer spells otherwise.
const KEYS = {Space: ' '};

let target = page;  // the page, or one of its frames ("frame")
const commands = {
  goto: async ({url}) => { target = page; await page.goto(url, {waitUntil: 'domcontentloaded'}); },
  evaluate: async ({expression}) => target.evaluate(expression),
  frame: async ({index}) => {
    if (index === null) { target = page; return; }
    const iframe = (await page.$$('iframe'))[index];
    target = await iframe.contentFrame();
  },
  press: async ({expression, key}) => {
    const element = await target.evaluateHandle(expression);
    await element.focus();
    await page.keyboard.press(KEYS[key] ?? key);
    await element.dispose();
  },
  tap: async ({x, y}) => { await page.touchscreen.tap(x, y); },
  screenshot: async ({path}) => { await page.screenshot({path, fullPage: true}); },
  pdf: async () => Buffer.from(await page.pdf({format: 'A4'})).toString('base64'),
  viewport: async ({width, height}) => { await page.setViewport({width, height}); },
  errors: async () => errors.splice(0),
  close: async () => { await browser.close(); },
};

const answer = (message) => process.stdout.write(`${JSON.stringify(message)}\n`);
answer({ok: true, value: await browser.version()});
for await (const line of readline.createInterface({input: process.stdin})) {
  const command = JSON.parse(line);
  try {
    answer({ok: true, value: (await commands[command.op](command)) ?? null});
  } catch (error) {
    answer({ok: false, error: String(error?.message ?? error)});
  }
  if (command.op === 'close') break;
}
process.exit(0);
