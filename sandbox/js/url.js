// URL and URLSearchParams for the sandbox: a compact subset of the WHATWG URL Standard.
// Covers special schemes (http, https, ws, wss, ftp, file) and opaque ones (mailto:, data:),
// relative resolution against a base, dot segments, percent-encoding sets, IPv4 number forms,
// default ports, and a live `searchParams`. Not covered: IDNA (non-ASCII host names are
// refused), IPv6 address compression (kept as written, lower-cased).
(function urlFactory(global, helpers) {
  'use strict';
  const {encodeURIComponentFn, decodeURIComponentFn, tag} = helpers;
  const TypeErrorCtor = TypeError;
  const kSpecial = {'ftp:': '21', 'file:': '', 'http:': '80', 'https:': '443', 'ws:': '80', 'wss:': '443'};
  const isSpecial = (scheme) => Object.prototype.hasOwnProperty.call(kSpecial, scheme);

  function invalid(input) { return new TypeErrorCtor('Invalid URL: ' + input); }

  // Percent-encoding: `set` is a string of ASCII characters to encode besides C0 controls,
  // space and non-ASCII (which are always encoded, as UTF-8).
  function encode(text, set) {
    let out = '';
    for (const ch of text) {
      const c = ch.codePointAt(0);
      if (c < 0x20 || c >= 0x7F || set.indexOf(ch) !== -1) {
        if (c < 0x80) out += (c < 16 ? '%0' : '%') + c.toString(16).toUpperCase();
        else try { out += encodeURIComponentFn(ch); }
        catch { out += '%EF%BF%BD'; }  // a lone surrogate becomes U+FFFD
      } else {
        out += ch;
      }
    }
    return out;
  }
  const kFragmentSet = ' "<>`';
  const kQuerySet = ' "#<>';
  const kSpecialQuerySet = ' "#<>\'';
  const kPathSet = ' "#<>?`{}';
  const kUserinfoSet = ' "#<>?`{}/:;=@[\\]^|';

  // The regular expressions, made on first use in a context and kept there: a literal inside
  // a function is a new expression every time it runs, compiled again in every isolate (those
  // of one URL resolution were a tenth of an execute call's instructions). In the execute
  // context js/warm.js makes and compiles them when the snapshot is made, so a call's isolate
  // finds them ready; the search context, which seldom parses a URL, carries none. The global
  // ones are only given to replace(), which starts them at lastIndex 0.
  let patterns = null;
  function re() {
    return patterns ??= {
      percentRun: /(%[0-9A-Fa-f]{2})+/g,
      hexPrefix: /^0[xX]/,
      hexDigits: /^[0-9a-fA-F]+$/,
      octalDigits: /^[0-7]+$/,
      decimalDigits: /^[0-9]+$/,
      ipv4Last: /^(0[xX][0-9a-fA-F]*|[0-9]+)$/,
      ipv6Literal: /^\[[0-9A-Fa-f:.]+\]$/,
      opaqueHostForbidden: /[\0\t\n\r #/:<>?@[\\\]^|]/,
      notVisibleAscii: /[^\x21-\x7E]/,
      hostForbidden: /[#%/:<>?@[\\\]^|]/,
      dotDot: /^(\.|%2e)(\.|%2e)$/i,
      slash: /[/\\]/,
      edgeControls: /^[\0- ]+|[\0- ]+$/g,
      tabOrNewline: /[\t\n\r]/g,
      schemePrefix: /^([A-Za-z][A-Za-z0-9+\-.]*):/,
      leadingSlash: /^[/\\]/,
      twoLeadingSlashes: /^[/\\]{2}/,
      leadingSlashes: /^[/\\]*/,
      specialAuthorityEnd: /[/\\?]/,
      authorityEnd: /[/?]/,
      port: /:([^:\]]*)$/,
      portDigits: /^[0-9]*$/,
      plus: /\+/g,
      schemeName: /^([A-Za-z][A-Za-z0-9+\-.]*)/,
      colon: /:/,
      bracketed: /\[.*\]/,
      leadingDigits: /^[0-9]*/,
    };
  }

  function percentDecode(text) {
    return text.replace(re().percentRun, (m) => {
      try { return decodeURIComponentFn(m); } catch { return m; }
    });
  }

  function parseIPv4Number(part) {
    if (part === '') return NaN;
    let radix = 10;
    if (re().hexPrefix.test(part)) { part = part.slice(2); radix = 16; if (part === '') return 0; }
    else if (part.length > 1 && part[0] === '0') { part = part.slice(1); radix = 8; }
    const valid = radix === 16 ? re().hexDigits : radix === 8 ? re().octalDigits : re().decimalDigits;
    return valid.test(part) ? parseInt(part, radix) : NaN;
  }
  // Returns the dotted form, null when `host` is not an IPv4 address, or throws when it looks
  // like one but is invalid.
  function parseIPv4(host, input) {
    const parts = host.split('.');
    if (parts[parts.length - 1] === '' && parts.length > 1) parts.pop();
    const last = parts[parts.length - 1];
    if (!re().ipv4Last.test(last)) return null;
    if (parts.length > 4) throw invalid(input);
    const numbers = parts.map(parseIPv4Number);
    if (numbers.some((n) => Number.isNaN(n))) throw invalid(input);
    for (let i = 0; i < numbers.length - 1; ++i) if (numbers[i] > 255) throw invalid(input);
    if (numbers[numbers.length - 1] >= 256 ** (5 - numbers.length)) throw invalid(input);
    let value = numbers[numbers.length - 1];
    for (let i = 0; i < numbers.length - 1; ++i) value += numbers[i] * 256 ** (3 - i);
    const out = [];
    for (let i = 0; i < 4; ++i) { out.unshift('' + (value % 256)); value = Math.floor(value / 256); }
    return out.join('.');
  }

  function parseHost(raw, special, input) {
    if (raw.startsWith('[')) {
      if (!re().ipv6Literal.test(raw)) throw invalid(input);
      return raw.toLowerCase();
    }
    if (!special) {
      if (re().opaqueHostForbidden.test(raw)) throw invalid(input);
      return encode(raw, '');
    }
    const host = percentDecode(raw).toLowerCase();
    if (host === '' && raw !== '') throw invalid(input);
    if (re().notVisibleAscii.test(host)) throw invalid(input);  // also: no IDNA support
    if (re().hostForbidden.test(host)) throw invalid(input);
    const ipv4 = parseIPv4(host, input);
    return ipv4 === null ? host : ipv4;
  }

  function isDot(seg) { return seg === '.' || seg.toLowerCase() === '%2e'; }
  function isDotDot(seg) { return re().dotDot.test(seg); }

  // Appends the segments of `path` (text after the authority) to `segments`.
  function parsePath(path, special, segments) {
    const parts = path.split(special ? re().slash : '/');
    if (parts[0] === '') parts.shift();
    for (let i = 0; i < parts.length; ++i) {
      const seg = parts[i];
      const last = i === parts.length - 1;
      if (isDotDot(seg)) {
        segments.pop();
        if (last) segments.push('');
      } else if (isDot(seg)) {
        if (last) segments.push('');
      } else {
        segments.push(encode(seg, kPathSet));
      }
    }
    return segments;
  }

  // Record fields: scheme ('https:'), username, password, host (null: none), port ('' or
  // digits), path (array of segments, or a string for an opaque path), query, fragment
  // (null or text without '?' / '#').
  function parse(input, base) {
    let s = ('' + input).replace(re().edgeControls, '').replace(re().tabOrNewline, '');
    const r = {scheme: '', username: '', password: '', host: null, port: '', path: [], query: null, fragment: null};
    const hash = s.indexOf('#');
    if (hash !== -1) { r.fragment = encode(s.slice(hash + 1), kFragmentSet); s = s.slice(0, hash); }
    const m = re().schemePrefix.exec(s);
    let rest;
    if (m) {
      r.scheme = m[1].toLowerCase() + ':';
      rest = s.slice(m[0].length);
      const special = isSpecial(r.scheme);
      if (special && base && base.scheme === r.scheme && !re().leadingSlash.test(rest)) {
        return relative(r, rest, base, input);
      }
      if (r.scheme === 'file:') {
        if (re().twoLeadingSlashes.test(rest)) return authority(r, rest.slice(2), input);
        r.host = '';
        return pathAndQuery(r, rest, input);
      }
      if (special) return authority(r, rest.replace(re().leadingSlashes, ''), input);
      if (rest.startsWith('//')) return authority(r, rest.slice(2), input);
      if (rest.startsWith('/')) return pathAndQuery(r, rest, input);
      const q = rest.indexOf('?');
      if (q !== -1) { r.query = encode(rest.slice(q + 1), kQuerySet); rest = rest.slice(0, q); }
      r.path = encode(rest, '');
      return r;
    }
    if (!base) throw invalid(input);
    r.scheme = base.scheme;
    if (typeof base.path === 'string') {
      if (!(s === '' && r.fragment !== null)) throw invalid(input);
      return {...base, fragment: r.fragment};
    }
    return relative(r, s, base, input);
  }

  function relative(r, rest, base, input) {
    const special = isSpecial(r.scheme);
    if (re().twoLeadingSlashes.test(rest) && (special || rest.startsWith('//'))) {
      return authority(r, rest.slice(2), input);
    }
    r.username = base.username; r.password = base.password; r.host = base.host; r.port = base.port;
    if (rest === '') {
      r.path = base.path.slice(); r.query = base.query;
      return r;
    }
    if (rest.startsWith('?')) {
      r.path = base.path.slice();
      r.query = encode(rest.slice(1), special ? kSpecialQuerySet : kQuerySet);
      return r;
    }
    if (re().leadingSlash.test(rest) && (special || rest.startsWith('/'))) return pathAndQuery(r, rest, input);
    r.path = base.path.slice(0, -1);
    return pathAndQuery(r, '/' + rest, input, r.path);
  }

  function authority(r, rest, input) {
    const special = isSpecial(r.scheme);
    const end = rest.search(special ? re().specialAuthorityEnd : re().authorityEnd);
    let auth = end === -1 ? rest : rest.slice(0, end);
    rest = end === -1 ? '' : rest.slice(end);
    const at = auth.lastIndexOf('@');
    if (at !== -1) {
      const userinfo = auth.slice(0, at);
      auth = auth.slice(at + 1);
      const colon = userinfo.indexOf(':');
      r.username = encode(colon === -1 ? userinfo : userinfo.slice(0, colon), kUserinfoSet);
      r.password = colon === -1 ? '' : encode(userinfo.slice(colon + 1), kUserinfoSet);
    }
    const portMatch = re().port.exec(auth);
    if (portMatch) {
      auth = auth.slice(0, portMatch.index);
      const port = portMatch[1];
      if (!re().portDigits.test(port)) throw invalid(input);
      if (port !== '') {
        const n = +port;
        if (n > 65535) throw invalid(input);
        r.port = kSpecial[r.scheme] === '' + n ? '' : '' + n;
      }
    }
    if (special && r.scheme !== 'file:' && auth === '') throw invalid(input);
    if ((r.username || r.password || r.port) && auth === '') throw invalid(input);
    r.host = parseHost(auth, special, input);
    if (r.scheme === 'file:' && r.host === 'localhost') r.host = '';
    return pathAndQuery(r, rest, input);
  }

  function pathAndQuery(r, rest, input, segments = []) {
    const special = isSpecial(r.scheme);
    const q = rest.indexOf('?');
    if (q !== -1) {
      r.query = encode(rest.slice(q + 1), special ? kSpecialQuerySet : kQuerySet);
      rest = rest.slice(0, q);
    }
    r.path = parsePath(rest, special, segments);
    if (special && r.path.length === 0) r.path.push('');
    return r;
  }

  function pathname(r) {
    if (typeof r.path === 'string') return r.path;
    return r.path.length ? '/' + r.path.join('/') : '';
  }
  function serialize(r, excludeFragment) {
    let out = r.scheme;
    if (r.host !== null) {
      out += '//';
      if (r.username || r.password) out += r.username + (r.password ? ':' + r.password : '') + '@';
      out += r.host + (r.port !== '' ? ':' + r.port : '');
    } else if (typeof r.path !== 'string' && r.path.length > 1 && r.path[0] === '') {
      out += '/.';
    }
    out += pathname(r);
    if (r.query !== null) out += '?' + r.query;
    if (!excludeFragment && r.fragment !== null) out += '#' + r.fragment;
    return out;
  }

  // ------------------------------------------------------------ URLSearchParams
  function formEncode(text) {
    let out = '';
    const bytes = encode(text, ' !"#$%&\'()+,/:;<=>?@[\\]^`{|}~');
    for (let i = 0; i < bytes.length; ++i) out += bytes[i] === '%' && bytes.startsWith('%20', i) ? (i += 2, '+') : bytes[i];
    return out;
  }
  function formDecode(text) { return percentDecode(text.replace(re().plus, ' ')); }
  function parseForm(text) {
    const list = [];
    for (const piece of text.split('&')) {
      if (piece === '') continue;
      const eq = piece.indexOf('=');
      list.push(eq === -1 ? [formDecode(piece), ''] : [formDecode(piece.slice(0, eq)), formDecode(piece.slice(eq + 1))]);
    }
    return list;
  }
  const toUSV = (v) => ('' + v).toWellFormed ? ('' + v).toWellFormed() : '' + v;

  class URLSearchParams {
    #list = [];
    #onChange = null;  // writes the query back into the URL this object belongs to, if any
    constructor(init = '') {
      if (init instanceof URLSearchParams) {
        this.#list = init.#list.map(([k, v]) => [k, v]);
      } else if (typeof init === 'object' && init !== null) {
        if (typeof init[Symbol.iterator] === 'function') {
          for (const pair of init) {
            const p = [...pair];
            if (p.length !== 2) throw new TypeErrorCtor('URLSearchParams: each pair must have exactly two items');
            this.#list.push([toUSV(p[0]), toUSV(p[1])]);
          }
        } else {
          for (const key of Object.keys(init)) this.#list.push([toUSV(key), toUSV(init[key])]);
        }
      } else {
        const s = toUSV(init);
        this.#list = parseForm(s.startsWith('?') ? s.slice(1) : s);
      }
    }
    static _attach(params, onChange, query) { params.#onChange = onChange; params.#list = parseForm(query || ''); }
    static _reset(params, query) { params.#list = parseForm(query || ''); }
    #update() { if (this.#onChange) this.#onChange(this.toString()); }
    get size() { return this.#list.length; }
    append(name, value) { this.#list.push([toUSV(name), toUSV(value)]); this.#update(); }
    delete(name, value) {
      name = toUSV(name);
      this.#list = this.#list.filter(([k, v]) => !(k === name && (value === undefined || v === toUSV(value))));
      this.#update();
    }
    get(name) { name = toUSV(name); const e = this.#list.find(([k]) => k === name); return e ? e[1] : null; }
    getAll(name) { name = toUSV(name); return this.#list.filter(([k]) => k === name).map(([, v]) => v); }
    has(name, value) {
      name = toUSV(name);
      return this.#list.some(([k, v]) => k === name && (value === undefined || v === toUSV(value)));
    }
    set(name, value) {
      name = toUSV(name); value = toUSV(value);
      const i = this.#list.findIndex(([k]) => k === name);
      if (i === -1) this.#list.push([name, value]);
      else {
        this.#list[i][1] = value;
        this.#list = this.#list.filter(([k], j) => j <= i || k !== name);
      }
      this.#update();
    }
    sort() {
      this.#list = this.#list.map((e, i) => [e, i]).sort((a, b) => {
        const x = a[0][0], y = b[0][0];
        return x < y ? -1 : x > y ? 1 : a[1] - b[1];
      }).map(([e]) => e);
      this.#update();
    }
    forEach(callback, thisArg) {
      for (const [k, v] of this.#list.slice()) callback.call(thisArg, v, k, this);
    }
    *entries() { for (const [k, v] of this.#list.slice()) yield [k, v]; }
    *keys() { for (const [k] of this.#list.slice()) yield k; }
    *values() { for (const [, v] of this.#list.slice()) yield v; }
    [Symbol.iterator]() { return this.entries(); }
    toString() { return this.#list.map(([k, v]) => formEncode(k) + '=' + formEncode(v)).join('&'); }
  }
  const attachParams = URLSearchParams._attach;
  const resetParams = URLSearchParams._reset;
  delete URLSearchParams._attach;
  delete URLSearchParams._reset;
  tag(URLSearchParams, 'URLSearchParams');

  // ------------------------------------------------------------ URL
  class URL {
    #r;
    #params = null;
    constructor(input, base) {
      if (arguments.length === 0) throw new TypeErrorCtor('URL: 1 argument required');
      let baseRecord = null;
      if (base !== undefined) baseRecord = parse(base instanceof URL ? base.href : base, null);
      this.#r = parse(input instanceof URL ? input.href : input, baseRecord);
    }
    static canParse(input, base) {
      try { new URL(input, base); return true; } catch { return false; }
    }
    #reparse(href) {
      this.#r = parse(href, null);
      if (this.#params) resetParams(this.#params, this.#r.query);
    }
    get href() { return serialize(this.#r, false); }
    set href(value) { this.#reparse('' + value); }
    get origin() {
      const r = this.#r;
      if (r.scheme === 'blob:' && typeof r.path === 'string') {
        try { return new URL(r.path).origin; } catch { return 'null'; }
      }
      if (!isSpecial(r.scheme) || r.scheme === 'file:') return 'null';
      return r.scheme + '//' + r.host + (r.port !== '' ? ':' + r.port : '');
    }
    get protocol() { return this.#r.scheme; }
    set protocol(value) {
      const m = re().schemeName.exec('' + value);
      if (!m) return;
      const scheme = m[1].toLowerCase() + ':';
      if (isSpecial(scheme) !== isSpecial(this.#r.scheme)) return;
      this.#r.scheme = scheme;
      if (kSpecial[scheme] === this.#r.port) this.#r.port = '';
    }
    get username() { return this.#r.username; }
    set username(value) { if (this.#r.host) this.#r.username = encode('' + value, kUserinfoSet); }
    get password() { return this.#r.password; }
    set password(value) { if (this.#r.host) this.#r.password = encode('' + value, kUserinfoSet); }
    get host() {
      const r = this.#r;
      return r.host === null ? '' : r.host + (r.port !== '' ? ':' + r.port : '');
    }
    set host(value) {
      if (typeof this.#r.path === 'string') return;
      try {
        const r = parse(this.#r.scheme + '//' + value, null);
        this.#r.host = r.host; if (re().colon.test(('' + value).replace(re().bracketed, ''))) this.#r.port = r.port;
      } catch { /* invalid: ignored, as in browsers */ }
    }
    get hostname() { return this.#r.host === null ? '' : this.#r.host; }
    set hostname(value) {
      if (typeof this.#r.path === 'string') return;
      try { this.#r.host = parse(this.#r.scheme + '//' + value, null).host; } catch { /* ignored */ }
    }
    get port() { return this.#r.port; }
    set port(value) {
      if (this.#r.host === null || this.#r.host === '' || this.#r.scheme === 'file:') return;
      const m = re().leadingDigits.exec('' + value)[0];
      if (m === '') { if (('' + value) === '') this.#r.port = ''; return; }
      const n = +m;
      if (n > 65535) return;
      this.#r.port = kSpecial[this.#r.scheme] === '' + n ? '' : '' + n;
    }
    get pathname() { return pathname(this.#r); }
    set pathname(value) {
      if (typeof this.#r.path === 'string') return;
      const special = isSpecial(this.#r.scheme);
      let v = '' + value;
      if (!re().leadingSlash.test(v)) v = '/' + v;
      this.#r.path = parsePath(v, special, []);
      if (special && this.#r.path.length === 0) this.#r.path.push('');
    }
    get search() { const q = this.#r.query; return q === null || q === '' ? '' : '?' + q; }
    set search(value) {
      let v = '' + value;
      if (v.startsWith('?')) v = v.slice(1);
      this.#r.query = v === '' ? null : encode(v, isSpecial(this.#r.scheme) ? kSpecialQuerySet : kQuerySet);
      if (this.#params) resetParams(this.#params, this.#r.query);
    }
    get searchParams() {
      if (!this.#params) {
        this.#params = new URLSearchParams();
        attachParams(this.#params, (query) => { this.#r.query = query === '' ? null : query; }, this.#r.query);
      }
      return this.#params;
    }
    get hash() { const f = this.#r.fragment; return f === null || f === '' ? '' : '#' + f; }
    set hash(value) {
      let v = '' + value;
      if (v.startsWith('#')) v = v.slice(1);
      this.#r.fragment = v === '' ? null : encode(v, kFragmentSet);
    }
    toString() { return this.href; }
    toJSON() { return this.href; }
  }
  tag(URL, 'URL');
  return {URL, URLSearchParams};
})
