// oidc-provider's storage, written to its adapter interface (the documentation's
// example/my_adapter.js: upsert, find, findByUserCode, findByUid, consume, destroy,
// revokeByGrantId; one adapter instance per model name).
//
// MapAdapter   plain Maps in the process. oidc-provider's shipped memory adapter is an LRU of
//              1,000 entries: under load it evicts live Sessions and Grants (codes then fail to
//              redeem), so it is no baseline. Nothing expires here during a run: the bench's
//              runs last minutes, authgate's memory store keeps its rows as long.
// PgAdapter    PostgreSQL through `pg`'s Pool, shaped as oidc-provider's contributed sequelize
//              example for PostgreSQL: a table per model, the payload a JSONB column, grantId,
//              userCode and uid as columns of their own (indexed where the model has them),
//              expiresAt and consumedAt. One statement per call.

import pg from 'pg';

const grantable = new Set([
  'AccessToken',
  'AuthorizationCode',
  'RefreshToken',
  'DeviceCode',
  'BackchannelAuthenticationRequest',
  'PreAuthorizedCode',
]);

// The models this configuration stores (oidc-provider names them when it builds an adapter).
export const MODELS = [
  'Session',
  'AccessToken',
  'AuthorizationCode',
  'RefreshToken',
  'DeviceCode',
  'ClientCredentials',
  'Client',
  'InitialAccessToken',
  'RegistrationAccessToken',
  'Interaction',
  'ReplayDetection',
  'PushedAuthorizationRequest',
  'Grant',
  'BackchannelAuthenticationRequest',
];

function epochTime() {
  return Math.floor(Date.now() / 1000);
}

// -- in memory -------------------------------------------------------------------------------

const maps = new Map(); // model name -> Map(id -> payload)
const byGrant = new Map(); // grantId -> Set of [model, id]
const byUid = new Map(); // Session uid -> id
const byUserCode = new Map(); // DeviceCode userCode -> id

export class MapAdapter {
  constructor(name) {
    this.name = name;
    if (!maps.has(name)) maps.set(name, new Map());
    this.store = maps.get(name);
  }

  async upsert(id, payload) {
    this.store.set(id, payload);
    if (grantable.has(this.name) && payload.grantId) {
      let members = byGrant.get(payload.grantId);
      if (!members) {
        members = new Set();
        byGrant.set(payload.grantId, members);
      }
      members.add(`${this.name}\u0000${id}`);
    }
    if (payload.uid) byUid.set(payload.uid, id);
    if (payload.userCode) byUserCode.set(payload.userCode, id);
  }

  async find(id) {
    return this.store.get(id);
  }

  async findByUid(uid) {
    const id = byUid.get(uid);
    return id === undefined ? undefined : this.store.get(id);
  }

  async findByUserCode(userCode) {
    const id = byUserCode.get(userCode);
    return id === undefined ? undefined : this.store.get(id);
  }

  async consume(id) {
    const payload = this.store.get(id);
    if (payload) payload.consumed = epochTime();
  }

  async destroy(id) {
    const payload = this.store.get(id);
    this.store.delete(id);
    if (payload?.uid) byUid.delete(payload.uid);
    if (payload?.userCode) byUserCode.delete(payload.userCode);
  }

  // oidc-provider calls it on each grantable model's adapter in turn.
  async revokeByGrantId(grantId) {
    const members = byGrant.get(grantId);
    for (const member of members ?? []) {
      const [name, id] = member.split('\u0000');
      if (name === this.name) {
        this.store.delete(id);
        members.delete(member);
      }
    }
  }
}

// -- PostgreSQL ------------------------------------------------------------------------------

let pool;

function table(name) {
  return `"oidc_${name}"`;
}

// The tables, created if missing (the sequelize example's sequelize.sync()).
export async function openPg(url, max) {
  pool = new pg.Pool({ connectionString: url, max });
  for (const name of MODELS) {
    await pool.query(
      `CREATE TABLE IF NOT EXISTS ${table(name)} (
         id text PRIMARY KEY,
         "grantId" text,
         "userCode" text,
         uid text,
         data jsonb NOT NULL,
         "expiresAt" timestamptz,
         "consumedAt" timestamptz)`,
    );
    if (grantable.has(name)) {
      await pool.query(`CREATE INDEX IF NOT EXISTS "oidc_${name}_grantId" ON ${table(name)} ("grantId")`);
    }
    if (name === 'Session') {
      await pool.query(`CREATE UNIQUE INDEX IF NOT EXISTS "oidc_${name}_uid" ON ${table(name)} (uid)`);
    }
    if (name === 'DeviceCode' || name === 'BackchannelAuthenticationRequest') {
      await pool.query(`CREATE UNIQUE INDEX IF NOT EXISTS "oidc_${name}_userCode" ON ${table(name)} ("userCode")`);
    }
  }
  return pool;
}

export function closePg() {
  return pool?.end();
}

function fromRow(row) {
  if (!row) return undefined;
  return {
    ...row.data,
    ...(row.consumedAt ? { consumed: Math.floor(row.consumedAt.getTime() / 1000) } : undefined),
  };
}

export class PgAdapter {
  constructor(name) {
    this.name = name;
    this.table = table(name);
    this.upsertText = `INSERT INTO ${this.table} (id, "grantId", "userCode", uid, data, "expiresAt")
      VALUES ($1, $2, $3, $4, $5, $6)
      ON CONFLICT (id) DO UPDATE SET "grantId" = EXCLUDED."grantId",
        "userCode" = EXCLUDED."userCode", uid = EXCLUDED.uid, data = EXCLUDED.data,
        "expiresAt" = EXCLUDED."expiresAt"`;
    this.selectText = `SELECT data, "consumedAt" FROM ${this.table}`;
  }

  async upsert(id, payload, expiresIn) {
    const expiresAt = expiresIn ? new Date(Date.now() + expiresIn * 1000) : null;
    await pool.query(this.upsertText, [
      id, payload.grantId ?? null, payload.userCode ?? null, payload.uid ?? null, payload, expiresAt,
    ]);
  }

  async find(id) {
    const { rows } = await pool.query(`${this.selectText} WHERE id = $1`, [id]);
    return fromRow(rows[0]);
  }

  async findByUid(uid) {
    const { rows } = await pool.query(`${this.selectText} WHERE uid = $1`, [uid]);
    return fromRow(rows[0]);
  }

  async findByUserCode(userCode) {
    const { rows } = await pool.query(`${this.selectText} WHERE "userCode" = $1`, [userCode]);
    return fromRow(rows[0]);
  }

  async consume(id) {
    await pool.query(`UPDATE ${this.table} SET "consumedAt" = now() WHERE id = $1`, [id]);
  }

  async destroy(id) {
    await pool.query(`DELETE FROM ${this.table} WHERE id = $1`, [id]);
  }

  async revokeByGrantId(grantId) {
    await pool.query(`DELETE FROM ${this.table} WHERE "grantId" = $1`, [grantId]);
  }
}
