/**
 * src/cluster/apply.ts: what applying each command does, on every node alike.
 *
 * Called by the replicator inside `applying({seq, nowMs})` (src/clock.ts), so that the
 * functions below take their local path (command.ts `commit`), record the stream sequence
 * in their transactions, and see the command's time as now.
 */
import type { Engine } from '../engine.js';
import { deleteKey, purgeExpiredKeys, storeReplicatedKey } from '../keys/keys.js';
import { deleteModel, putModel } from '../llm/registry.js';
import { ADMIN_ACTOR, appendExchange, deleteConversation, purgeExpiredConversations, updateConversation } from '../conversation/history.js';
import type { Command } from './command.js';
import { deleteRule, putRule } from '../analytics/rules.js';
import { applyBatchLocal } from '../analytics/flush.js';
import { deleteOwnItem, deleteSet, deleteSetItem, putOwnItem, putSet, putSetItem } from '../rulesets/rulesets.js';
import { specOf } from '../rulesets/kinds.js';
import { deletePreset, putPreset } from '../presets/presets.js';

export function applyCommand(engine: Engine, cmd: Command): Promise<unknown> {
  const store = engine.store;
  switch (cmd.op) {
    case 'collection.create':
      return engine.createCollection(cmd.schema);
    case 'collection.delete':
      return engine.deleteCollection(cmd.name);
    case 'collection.update':
      return engine.updateCollection(cmd.name, cmd.body);
    case 'alias.upsert':
      return engine.upsertAlias(cmd.name, cmd.body);
    case 'alias.delete':
      return engine.deleteAlias(cmd.name);
    case 'stopwords.put':
      return engine.putStopwords(cmd.name, cmd.body);
    case 'stopwords.delete':
      return engine.deleteStopwords(cmd.name);
    case 'stemdict.import':
      return engine.importStemmingDictionary(cmd.id, cmd.words);
    case 'stemdict.delete':
      return engine.deleteStemmingDictionary(cmd.id);
    case 'docs.write':
      return engine.applyOps(cmd.collection, cmd.ops);
    case 'key.create':
      return storeReplicatedKey(store, cmd.body);
    case 'key.delete':
      return deleteKey(store, cmd.id);
    case 'keys.purge':
      return purgeExpiredKeys(store);
    case 'model.put':
      return putModel(store, { area: cmd.area, noun: cmd.noun }, cmd.id, cmd.rec, cmd.create);
    case 'model.delete':
      return deleteModel(store, { area: cmd.area, noun: cmd.noun }, cmd.id);
    // (a command published before owners were recorded was checked as every command then was)
    case 'conversation.append':
      return appendExchange(store, cmd.id, cmd.question, cmd.answer, { ttl: cmd.ttl, create: cmd.create, actor: cmd.actor ?? ADMIN_ACTOR });
    case 'conversation.update':
      return updateConversation(store, cmd.id, cmd.body, cmd.actor ?? ADMIN_ACTOR);
    case 'conversation.delete':
      return deleteConversation(store, cmd.id, cmd.actor ?? ADMIN_ACTOR);
    case 'conversations.purge':
      return purgeExpiredConversations(store);
    case 'analytics.rule.put':
      return putRule(store, cmd.name, cmd.body, { create: cmd.create });
    case 'analytics.rule.delete':
      return deleteRule(store, cmd.name);
    case 'rule.put':
      return putOwnItem(store, specOf(cmd.kind), cmd.collection, cmd.id, cmd.body);
    case 'rule.delete':
      return deleteOwnItem(store, specOf(cmd.kind), cmd.collection, cmd.id);
    case 'ruleset.put':
      return putSet(store, specOf(cmd.kind), cmd.name, cmd.body);
    case 'ruleset.delete':
      return deleteSet(store, specOf(cmd.kind), cmd.name);
    case 'ruleset.item.put':
      return putSetItem(store, specOf(cmd.kind), cmd.name, cmd.id, cmd.body);
    case 'ruleset.item.delete':
      return deleteSetItem(store, specOf(cmd.kind), cmd.name, cmd.id);
    case 'config.update':
      return engine.updateRuntimeConfig(cmd.changes);
    case 'preset.put':
      return putPreset(store, cmd.name, cmd.body);
    case 'preset.delete':
      return deletePreset(store, cmd.name);
    case 'analytics.apply':
      return applyBatchLocal(engine, cmd.envId, { id: cmd.batchId, parts: new Map(cmd.parts) });
  }
}
