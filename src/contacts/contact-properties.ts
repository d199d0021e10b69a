import { characterCount } from '../core/characters.js';
import { AppError } from '../core/errors.js';

// A contact's properties: a flat map of names to strings, numbers or
// booleans, for personalising what is sent ("{{ contact.properties.company }}").
// Given properties are merged into those the contact has; null removes one.

export type PropertyValue = string | number | boolean;
export type Properties = Record<string, PropertyValue>;
/** What a request gives: values to set, or null to remove. */
export type PropertiesPatch = Record<string, PropertyValue | null>;

export const MAX_PROPERTIES = 50;
export const MAX_PROPERTY_VALUE_LENGTH = 500;
/** A letter, then letters, digits or underscores: names that read as Liquid paths. */
const NAME = /^[A-Za-z][A-Za-z0-9_]{0,49}$/;

const invalid = (message: string, param: string) => new AppError('validation_error', message, { param });

/** Checks the names and values a request gives; returns them as a patch. */
export function checkPropertiesPatch(input: unknown, param: string): PropertiesPatch {
  if (typeof input !== 'object' || input === null || Array.isArray(input)) throw invalid('properties is an object of names and values.', param);
  const patch: PropertiesPatch = Object.create(null) as PropertiesPatch;
  for (const [name, value] of Object.entries(input)) {
    if (!NAME.test(name)) {
      throw invalid(`'${name.slice(0, 60)}' is not a property name: a letter, then letters, digits or _, 50 at most.`, `${param}.${name.slice(0, 60)}`);
    }
    const at = `${param}.${name}`;
    if (typeof value === 'string') {
      if (characterCount(value) > MAX_PROPERTY_VALUE_LENGTH) throw invalid(`A property value is at most ${MAX_PROPERTY_VALUE_LENGTH} characters.`, at);
    } else if (typeof value === 'number') {
      if (!Number.isFinite(value)) throw invalid('A number property is finite.', at);
    } else if (typeof value !== 'boolean' && value !== null) {
      throw invalid('A property value is a string, a number, a boolean, or null to remove it.', at);
    }
    patch[name] = value as PropertyValue | null;
  }
  return patch;
}

/** The properties after the patch; more than MAX_PROPERTIES is refused. */
export function mergeProperties(current: Properties, patch: PropertiesPatch | undefined, param: string): Properties {
  if (patch === undefined) return current;
  const merged: Properties = Object.assign(Object.create(null) as Properties, current);
  for (const [name, value] of Object.entries(patch)) {
    if (value === null) delete merged[name];
    else merged[name] = value;
  }
  if (Object.keys(merged).length > MAX_PROPERTIES) throw invalid(`A contact has at most ${MAX_PROPERTIES} properties.`, param);
  return merged;
}

/** Properties as stored (JSON text), read back. */
export const parseProperties = (text: string): Properties => Object.assign(Object.create(null) as Properties, JSON.parse(text) as Properties);
