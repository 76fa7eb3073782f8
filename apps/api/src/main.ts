// placeholder until the API app lands
export {};
